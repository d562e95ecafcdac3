package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
)

func TestRecallHandleCodec(t *testing.T) {
	h := RecallHandle{Topic: "TopicA", BrokerName: "broker-a", Timestamp: "1700000000001", MessageID: "7F0000010001"}
	// Java: Base64.getUrlEncoder().encodeToString("v1 TopicA broker-a 1700000000001 7F0000010001".getBytes(UTF_8))
	const java = "djEgVG9waWNBIGJyb2tlci1hIDE3MDAwMDAwMDAwMDEgN0YwMDAwMDEwMDAx"
	if got := h.Encode(); got != java {
		t.Fatalf("Encode = %s, want %s", got, java)
	}
	for _, s := range []string{java, "djEgVCBiIDEgbQ", "djEgVCBiIDEgbQ=="} { // padding optional
		if _, err := DecodeRecallHandle(s); err != nil {
			t.Errorf("decode %q: %v", s, err)
		}
	}
	if got, err := DecodeRecallHandle(java); err != nil || got != h {
		t.Fatalf("decode %+v %v", got, err)
	}
	for _, bad := range []string{"", "!!!", "djIgVCBiIDEgbQ==" /* v2 T b 1 m */, "djEgVCBiIDE=" /* v1 T b 1 */} {
		if _, err := DecodeRecallHandle(bad); !errors.Is(err, ErrBadRecallHandle) {
			t.Errorf("decode %q: %v, want ErrBadRecallHandle", bad, err)
		}
	}
}

// TestRecallTimer: the handle of a parked timer names its real topic, the
// broker, its slot's start + 1 (Java's floored TIMER_OUT_MS + 1) and its
// UNIQ_KEY; the marker built from it cancels the timer, also when the
// delivery time lies exactly on a slot boundary (a handle of due + 1 named
// the next slot there and cancelled nothing). Delay levels and retries get
// no handle.
func TestRecallTimer(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	for _, onBoundary := range []bool{true, false} {
		t.Run(fmt.Sprintf("onBoundary=%v", onBoundary), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, "", nil)
			r.svc.Start()
			p := r.cfg.TimerPrecisionMs.Milliseconds()
			if p < 2 {
				t.Fatalf("the rig's timer precision is %dms: a slot boundary needs more", p)
			}
			// A boundary whose slot starts 800ms ahead at least: the marker's
			// time (the slot start + 1) must lie ahead too.
			due := (time.Now().Add(800*time.Millisecond).UnixMilli()/p + 2) * p
			slotStart := due - p
			if !onBoundary {
				due += p / 2
				slotStart = due / p * p
			}
			gone := newMsg("Q", 1, "gone", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10))
			r.send(gone)
			r.send(newMsg("Q", 1, "kept", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
			hs := r.svc.RecallHandle(gone, "broker-a")
			h, err := DecodeRecallHandle(hs)
			if err != nil {
				t.Fatal(err)
			}
			if h.Topic != "Q" || h.BrokerName != "broker-a" || h.Timestamp != strconv.FormatInt(slotStart+1, 10) || h.MessageID != "UNIQ-gone" {
				t.Fatalf("handle %+v, want Q broker-a %d UNIQ-gone (due %d, precision %dms)", h, slotStart+1, due, p)
			}
			m := RecallMarker(h, "pg", time.Now().UnixMilli())
			if m.Tags() != RecallTag || m.Properties[message.PropertyTimerDelUniqKey] != "Q+UNIQ-gone" {
				t.Fatalf("marker %+v", m.Properties)
			}
			r.send(m)
			r.waitCount("Q", 1, 1, 5*time.Second)
			r.waitIdle(5 * time.Second)
			checkBodies(t, r.read("Q", 1), "kept")
			if got := r.read("Q", 0); len(got) != 0 {
				t.Fatalf("the marker was delivered: %v", bodies(got))
			}
		})
	}
}

// TestRecallHandleKinds: delay levels, retries and plain messages get no
// recall handle.
func TestRecallHandleKinds(t *testing.T) {
	r := newRig(t, "", nil)
	lvl := newMsg("Q", 0, "lvl", message.PropertyDelayTimeLevel, "1")
	retry := newMsg("%RETRY%g", 0, "retry", message.PropertyTimerDelayMS, "5000")
	plain := newMsg("Q", 0, "plain")
	for _, m := range []*message.Message{lvl, retry, plain} {
		if err := r.svc.Schedule(m); err != nil {
			t.Fatal(err)
		}
		if hs := r.svc.RecallHandle(m, "broker-a"); hs != "" {
			t.Errorf("%s: recall handle %q, want none", m.Body, hs)
		}
	}
}
