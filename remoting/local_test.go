package remoting

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLocalChannel: a response written to a local channel reaches deliver
// decoded; requests are dropped; after Close nothing is delivered and the
// channel is inactive.
func TestLocalChannel(t *testing.T) {
	var got []*Command
	ch := NewLocalChannel("local", "10.0.0.1:5", func(c *Command) { got = append(got, c) })
	if !ch.IsActive() || ch.RemoteAddr() != "10.0.0.1:5" {
		t.Fatalf("new local channel: active=%v remote=%q", ch.IsActive(), ch.RemoteAddr())
	}
	req := NewRequest(11, map[string]string{"a": "b"}, nil)
	req.Opaque = 7
	resp := NewResponse(req, 0, "fine")
	resp.SetExt("k", "v")
	resp.Body = []byte("body")
	if err := ch.WriteResponse(resp); err != nil {
		t.Fatal(err)
	}
	if err := ch.write(NewRequest(12, nil, nil)); err != nil {
		t.Fatalf("request on a local channel: %v, want it dropped", err)
	}
	if len(got) != 1 || got[0].Opaque != 7 || got[0].Remark != "fine" || got[0].Ext("k") != "v" || string(got[0].Body) != "body" {
		t.Fatalf("delivered %+v, want the response alone", got)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if ch.IsActive() {
		t.Fatal("closed local channel still active")
	}
	if err := ch.WriteResponse(resp); err == nil || len(got) != 1 {
		t.Fatalf("write after Close: %v, %d delivered", err, len(got))
	}
}

// TestLocalPeerChannel: requests (a oneway push) go to request decoded,
// responses to deliver.
func TestLocalPeerChannel(t *testing.T) {
	var resps, reqs []*Command
	ch := NewLocalPeerChannel("local", "10.0.0.1:5", func(c *Command) { resps = append(resps, c) }, func(c *Command) { reqs = append(reqs, c) })
	push := NewRequest(200073, map[string]string{"liteTopic": "a"}, nil)
	push.MarkOneway()
	if err := ch.InvokeOneway(push); err != nil {
		t.Fatal(err)
	}
	if err := ch.WriteResponse(NewResponse(NewRequest(11, nil, nil), 0, "")); err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].Code != 200073 || reqs[0].Ext("liteTopic") != "a" || !reqs[0].IsOneway() || len(resps) != 1 {
		t.Fatalf("requests %+v, responses %+v; want the push and the response apart", reqs, resps)
	}
}

// TestLocalPeerChannelDeliver: the request callback of a local peer
// channel answers an Invoke with Deliver, at once or from another
// goroutine; an answer after the Invoke's timeout is dropped, as is one
// for an opaque nobody waits for.
func TestLocalPeerChannelDeliver(t *testing.T) {
	tests := []struct {
		name  string
		later bool
	}{
		{name: "in the callback"},
		{name: "from another goroutine", later: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ch *Channel
			ch = NewLocalPeerChannel("local", "10.0.0.1:5", func(*Command) {}, func(req *Command) {
				resp := NewResponse(req, 0, "answered "+req.Ext("q"))
				if tc.later {
					go ch.Deliver(resp)
					return
				}
				ch.Deliver(resp)
			})
			resp, err := ch.Invoke(context.Background(), NewRequest(307, map[string]string{"q": "x"}, nil))
			if err != nil || resp.Remark != "answered x" || !resp.IsResponse() {
				t.Fatalf("Invoke: %+v, %v; want the callback's answer", resp, err)
			}
		})
	}
	t.Run("too late", func(t *testing.T) {
		held := make(chan *Command, 1)
		ch := NewLocalPeerChannel("local", "10.0.0.1:5", func(*Command) {}, func(req *Command) { held <- req })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if _, err := ch.Invoke(ctx, NewRequest(307, nil, nil)); !errors.Is(err, ErrTimeout) {
			t.Fatalf("unanswered Invoke: %v, want ErrTimeout", err)
		}
		req := <-held
		ch.Deliver(NewResponse(req, 0, "late")) // dropped, no panic
		ch.Deliver(&Command{Opaque: 99999})
		ch.pmu.Lock()
		n := len(ch.pending)
		ch.pmu.Unlock()
		if n != 0 {
			t.Fatalf("%d requests still pending", n)
		}
	})
}
