package remoting

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// NewLocalChannel returns a Channel with no connection under it: every
// command written to it (a response a handler writes later, as a resumed
// long-polling request does) is decoded back and handed to deliver. It
// lets an in-process caller — the broker's gRPC endpoint calling the
// remoting handlers — take part in what needs a channel: long polling,
// client registration, the peer address in logs. Close ends it; the
// handlers then see it inactive and drop what they held for it. A request
// written to it is dropped: a oneway notification has nobody to go to, an
// Invoke times out.
func NewLocalChannel(local, remote string, deliver func(*Command)) *Channel {
	return newChannel(0, local, remote, &localTransport{deliver: deliver}, new(atomic.Int32), time.Second, slog.New(slog.DiscardHandler))
}

// NewLocalPeerChannel is NewLocalChannel whose requests go to request
// instead of being dropped: a oneway request the broker pushes to a client
// (NOTIFY_UNSUBSCRIBE_LITE, say) reaches the in-process caller, which
// passes it on in its own protocol.
func NewLocalPeerChannel(local, remote string, deliver, request func(*Command)) *Channel {
	return newChannel(0, local, remote, &localTransport{deliver: deliver, request: request}, new(atomic.Int32), time.Second, slog.New(slog.DiscardHandler))
}

type localTransport struct {
	deliver func(*Command)
	request func(*Command) // nil: requests are dropped
	closed  atomic.Bool
}

// write decodes the frame (length field first) and delivers a copy: the
// Channel reuses head, and the writer may reuse body.
func (t *localTransport) write(head, body []byte) error {
	if t.closed.Load() {
		return ErrConnClosed
	}
	if len(head) < 4 {
		return ErrFrameTooShort
	}
	frame := make([]byte, 0, len(head)-4+len(body))
	frame = append(append(frame, head[4:]...), body...)
	cmd, err := Decode(frame)
	if err != nil {
		return err
	}
	switch {
	case cmd.IsResponse():
		t.deliver(cmd)
	case t.request != nil:
		t.request(cmd)
	}
	return nil
}

func (t *localTransport) close() error { t.closed.Store(true); return nil }

// Local reports whether ch is an in-process channel (NewLocalChannel,
// NewLocalPeerChannel) rather than a connection.
func (ch *Channel) Local() bool {
	_, ok := ch.t.(*localTransport)
	return ok
}

func (t *localTransport) active() bool { return !t.closed.Load() }

// Deliver completes the request waiting on ch under resp.Opaque with resp,
// as a response frame read from a connection does; a response nobody
// waits for (one that comes after the request's timeout) is dropped. It is
// how the request callback of NewLocalPeerChannel answers a request
// invoked on its channel: at once, or later from another goroutine (the
// callback runs while the channel's write is in progress and must not
// block).
func (ch *Channel) Deliver(resp *Command) {
	resp.Flag |= FlagResponse
	ch.completeResponse(resp)
}
