package send

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// nopStore accepts every message without storing it.
type nopStore struct{ res store.PutResult }

func (s *nopStore) PutMessage(context.Context, *message.Message) (store.PutResult, error) {
	return s.res, nil
}

func (s *nopStore) PutMessages(context.Context, []*message.Message) (store.PutResult, error) {
	return s.res, nil
}

// BenchmarkSendV2Handler measures the SEND_MESSAGE_V2 handler alone (header
// parsing, checks against the real topic table, message build, response)
// with a store that does nothing.
func BenchmarkSendV2Handler(b *testing.B) {
	for _, bc := range []struct{ name, props string }{
		{"java", props("KEYS", "key1", "UNIQ_KEY", "FD000000000000000000000000000002", "WAIT", "true", "TAGS", "TagA")},
		{"noUniqKey", props("KEYS", "key1", "WAIT", "true", "TAGS", "TagA")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b)
			f.p.d.Store = &nopStore{res: store.PutResult{QueueOffset: 12345, MsgIDs: []string{"0A00000100002A9F0000000000001234"}}}
			h := f.p.Handlers()[code.SendMessageV2]
			req := sendV2("TopicTest", 1, bc.props, strings.Repeat("x", 128))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				resp, err := h(ctx, nil, req)
				if err != nil || resp.Code != code.Success {
					b.Fatalf("%v %+v", err, resp)
				}
			}
		})
	}
}

// BenchmarkSendV2FromFrame is BenchmarkSendV2Handler with the request
// decoded from its ROCKETMQ frame every time, as the remoting server does:
// header decoded into a map (map) or read in place (deferred,
// remoting.Server.DeferExtFields).
func BenchmarkSendV2FromFrame(b *testing.B) {
	for _, bc := range []struct {
		name     string
		deferred []int32
	}{{"map", nil}, {"deferred", []int32{code.SendMessageV2}}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b)
			f.p.d.Store = &nopStore{res: store.PutResult{QueueOffset: 12345, MsgIDs: []string{"0A00000100002A9F0000000000001234"}}}
			h := f.p.Handlers()[code.SendMessageV2]
			req := sendV2("TopicTest", 1, props("KEYS", "key1", "UNIQ_KEY", "FD000000000000000000000000000002", "WAIT", "true", "TAGS", "TagA"), strings.Repeat("x", 1024))
			benchFromFrame(b, h, req, bc.deferred)
		})
	}
}

// BenchmarkSendBatchFromFrame is a SEND_BATCH_MESSAGE as Apache's
// benchmark.BatchProducer sends it (16 items of 1 KiB, each with WAIT and
// a UNIQ_KEY) decoded from its frame with the header deferred, then
// handled with a store that does nothing: the send path's cost per batch
// before the store (ns/op is per batch of 16).
func BenchmarkSendBatchFromFrame(b *testing.B) {
	f := newFixture(b)
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = fmt.Sprintf("0A00000100002A9F%016X", 1024*i)
	}
	f.p.d.Store = &nopStore{res: store.PutResult{QueueOffset: 12345, MsgIDs: ids}}
	h := f.p.Handlers()[code.SendBatchMessage]
	var body []byte
	for i := range 16 {
		var err error
		body, err = message.AppendBatchItem(body, 0, []byte(strings.Repeat("x", 1024)),
			map[string]string{"WAIT": "true", "UNIQ_KEY": fmt.Sprintf("7F00000100002A9F%016X", i)})
		if err != nil {
			b.Fatal(err)
		}
	}
	benchFromFrame(b, h, batchReq("TopicTest", 1, body), []int32{code.SendBatchMessage})
}

// benchFromFrame runs h on req decoded from its ROCKETMQ frame every
// time, with the extFields of the deferred codes left undecoded.
func benchFromFrame(b *testing.B, h remoting.Handler, req *remoting.Command, deferred []int32) {
	req.SerializeType = remoting.SerializeRocketMQ
	frame, err := remoting.Encode(req)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		buf := append([]byte(nil), frame[4:]...) // the server's copy of the frame
		r, err := remoting.DecodeDeferring(buf, deferred)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := h(ctx, nil, r)
		if err != nil || resp.Code != code.Success {
			b.Fatalf("%v %+v", err, resp)
		}
	}
}
