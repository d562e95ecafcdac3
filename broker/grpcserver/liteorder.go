package grpcserver

import (
	"sync"
	"time"
)

// liteOrder applies each lite push consumer's subscription changes in the
// order the server read them. The clients do not wait for one change
// before sending the next (the Node.js client sends the COMPLETE_ADD of
// its still empty set at start and its first subscribeLite's PARTIAL_ADD
// right after), and the rpcs run concurrently: handled the other way
// round, the old COMPLETE_ADD would undo the newer PARTIAL_ADD. So every
// lite topic of a client remembers the arrival of the change that last
// set it; an older change leaves it alone (last writer wins, by arrival),
// and a client's changes reach the broker one at a time, each bringing
// the broker to that state.
type liteOrder struct {
	mu      sync.Mutex
	clients map[liteClient]*liteState
	seq     uint64 // numbers unnumbered requests (arrivalOf 0)
	calls   int
}

type liteClient struct{ id, group string }

type liteState struct {
	mu    sync.Mutex
	lites map[string]liteMark
	used  time.Time
}

// liteMark is a lite topic's last change: its arrival and whether it left
// the topic subscribed.
type liteMark struct {
	arrival uint64
	on      bool
}

// liteIdle is how long the state of a client that sent nothing is kept; a
// client that went away without COMPLETE_REMOVE leaves it behind.
const liteIdle = time.Hour

// apply merges s (arriving at arrival) into the client's state and, under
// the client's lock, sends the broker what brings it to that state: the
// lite topics of a PARTIAL change that no newer change set, a
// COMPLETE_ADD of everything subscribed now. A change left with nothing
// to do answers OK without a call.
func (o *liteOrder) apply(arrival uint64, s LiteSync, send func(LiteSync) (Result, error)) (Result, error) {
	st := o.state(liteClient{s.ClientID, s.Group}, &arrival, s.Action == "COMPLETE_REMOVE")
	st.mu.Lock()
	defer st.mu.Unlock()
	switch s.Action {
	case "PARTIAL_ADD", "PARTIAL_REMOVE":
		on := s.Action == "PARTIAL_ADD"
		var keep []string
		for _, l := range s.LiteTopics {
			if m, ok := st.lites[l]; ok && m.arrival > arrival {
				continue // a newer change decided this one
			}
			st.lites[l] = liteMark{arrival, on}
			keep = append(keep, l)
		}
		if len(keep) == 0 {
			return Result{}, nil
		}
		s.LiteTopics = keep
	case "COMPLETE_ADD":
		in := make(map[string]bool, len(s.LiteTopics))
		for _, l := range s.LiteTopics {
			in[l] = true
		}
		for l, m := range st.lites {
			if !in[l] && m.arrival < arrival {
				st.lites[l] = liteMark{arrival, false}
			}
		}
		for l := range in {
			if m, ok := st.lites[l]; !ok || m.arrival < arrival {
				st.lites[l] = liteMark{arrival, true}
			}
		}
		s.LiteTopics = s.LiteTopics[:0]
		for l, m := range st.lites {
			if m.on {
				s.LiteTopics = append(s.LiteTopics, l)
			}
		}
	}
	return send(s)
}

// state is the client's state, made on first use; arrival 0 gets the next
// local number (requests not read by the server, in call order). A
// COMPLETE_REMOVE forgets the client after it. Idle clients are dropped
// now and then.
func (o *liteOrder) state(c liteClient, arrival *uint64, forget bool) *liteState {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.clients == nil {
		o.clients = map[liteClient]*liteState{}
	}
	if *arrival == 0 {
		o.seq++
		*arrival = o.seq
	}
	now := time.Now()
	if o.calls++; o.calls%1024 == 0 {
		for k, st := range o.clients {
			if now.Sub(st.used) > liteIdle {
				delete(o.clients, k)
			}
		}
	}
	st := o.clients[c]
	if st == nil {
		st = &liteState{lites: map[string]liteMark{}}
		o.clients[c] = st
	}
	st.used = now
	if forget {
		delete(o.clients, c)
	}
	return st
}
