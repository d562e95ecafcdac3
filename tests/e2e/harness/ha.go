package harness

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// HAStatus asks the broker at addr (ours or Apache's) for
// GET_BROKER_HA_STATUS and decodes its HARuntimeInfo; failures fail t.
func HAStatus(t testing.TB, rc *remoting.Client, addr string) protocol.HARuntimeInfo {
	t.Helper()
	return Query[protocol.HARuntimeInfo](t, rc, addr, code.GetBrokerHAStatus)
}

// Query sends the server at addr a request reqCode without fields and
// decodes the JSON body of its SUCCESS answer as a T; failures fail t.
func Query[T any](t testing.TB, rc *remoting.Client, addr string, reqCode int32) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(reqCode, nil, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("harness: %s %s: %v %v", code.RequestName(reqCode), addr, err, resp)
	}
	var v T
	if err := protocol.Unmarshal(resp.Body, &v); err != nil {
		t.Fatalf("harness: %s answer from %s: %v: %s", code.RequestName(reqCode), addr, err, resp.Body)
	}
	return v
}

// QueuedMessages sums GET_MAX_OFFSET over queues 0..queues-1 of topic on
// the broker at addr: how many messages its consume queues index.
func QueuedMessages(rc *remoting.Client, addr, topic string, queues int) (int64, error) {
	var total int64
	for q := range queues {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code.GetMaxOffset,
			map[string]string{"topic": topic, "queueId": strconv.Itoa(q)}, nil))
		cancel()
		if err != nil {
			return 0, fmt.Errorf("GET_MAX_OFFSET %s %s/%d: %w", addr, topic, q, err)
		}
		off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("GET_MAX_OFFSET %s %s/%d: code %d, offset %q", addr, topic, q, resp.Code, resp.Ext("offset"))
		}
		total += off
	}
	return total, nil
}
