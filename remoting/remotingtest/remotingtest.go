// Package remotingtest holds the request helpers of tests that talk to a
// server over a remoting.Client.
package remotingtest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
)

// Invoke sends a request to addr and waits up to 10 s for the answer,
// failing t when none comes.
func Invoke(t testing.TB, c *remoting.Client, addr string, reqCode int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(reqCode, ext, body))
	if err != nil {
		t.Fatalf("request %d to %s: %v", reqCode, addr, err)
	}
	return resp
}

// Want fails t unless resp has code want and a remark containing remark.
func Want(t testing.TB, what string, resp *remoting.Command, want int32, remark string) {
	t.Helper()
	if resp.Code != want || !strings.Contains(resp.Remark, remark) {
		t.Fatalf("%s: code %d remark %q; want %d with %q", what, resp.Code, resp.Remark, want, remark)
	}
}

// SendExt is the header of a plain SEND_MESSAGE (version 1, as client-go
// sends it) to queue qid of topic from producer group group, with the
// message properties given as key, value, ... pairs.
func SendExt(t testing.TB, group, topic string, qid int, kv ...string) map[string]string {
	t.Helper()
	props := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	p, err := message.EncodeProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(qid), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"properties": string(p), "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}
}

// InvokeAsync sends a request to addr without waiting and returns the
// channel its answer arrives on; a request that fails (or gets no answer
// within timeout) arrives as code -1 with the error as remark.
func InvokeAsync(t testing.TB, c *remoting.Client, addr string, req *remoting.Command, timeout time.Duration) <-chan *remoting.Command {
	t.Helper()
	out := make(chan *remoting.Command, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := c.InvokeAsync(ctx, addr, req, func(resp *remoting.Command, err error) {
		cancel()
		if err != nil {
			resp = &remoting.Command{Code: -1, Remark: err.Error()}
		}
		out <- resp
	})
	if err != nil {
		cancel()
		t.Fatalf("request %d to %s: %v", req.Code, addr, err)
	}
	return out
}

// ExtInt is the number in the header field k of resp, failing t when the
// field is missing or not a number.
func ExtInt(t testing.TB, resp *remoting.Command, k string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(resp.Ext(k), 10, 64)
	if err != nil {
		t.Fatalf("response %d (%s): field %s = %q", resp.Code, resp.Remark, k, resp.Ext(k))
	}
	return v
}

// Absent, as a value given to SetFields, removes the field: how tests
// build a request that lacks a header field.
const Absent = "<absent>"

// SetFields changes the header fields ext to the key, value, ... pairs of
// kv (a value of Absent removes the key) and returns ext.
func SetFields(ext map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == Absent {
			delete(ext, kv[i])
		} else {
			ext[kv[i]] = kv[i+1]
		}
	}
	return ext
}
