package auth

import (
	"fmt"
	"testing"

	"github.com/rmqgo/rmq/remoting"
)

// benchSendHook is the hook of a service with both checks on, a Normal
// user alice whose ACL has entries custom entries (Pub on Topic:Bench*
// among them, the one a send matches), and a signed SEND_MESSAGE_V2 of
// BenchTopic (a 1 KiB body, the header of a Java client).
func benchSendHook(b *testing.B, cfg Config, entries int) (*Hook, *remoting.Channel, *remoting.Command) {
	b.Helper()
	st, _ := OpenStore("", nil)
	svc := NewService(cfg, st, nil)
	if err := svc.CreateUser(User{Username: "alice", Password: "alicepw"}); err != nil {
		b.Fatal(err)
	}
	var es []Entry
	for i := range entries - 1 {
		r, _ := ParseResource(fmt.Sprintf("Topic:Other%d*", i))
		es = append(es, Entry{Resource: r, Actions: []Action{ActPub, ActSub}, Decision: Allow})
	}
	r, _ := ParseResource("Topic:Bench*")
	es = append(es, Entry{Resource: r, Actions: []Action{ActPub}, Decision: Allow})
	if err := svc.PutACL(&ACL{Subject: "User:alice", Policies: []Policy{{Type: PolicyCustom, Entries: es}}}); err != nil {
		b.Fatal(err)
	}
	ext := map[string]string{"a": "pg", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0",
		"i": "UNIQ_KEY\x0101000000000000000000000001\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a"}
	body := make([]byte, 1024)
	ext = signed("alice", "alicepw", ext, string(body))
	ch := remoting.NewLocalChannel("127.0.0.1:10911", "127.0.0.1:50000", func(*remoting.Command) {})
	// The hook reads the request and never changes it: one serves every
	// iteration, so the figures are the checks' alone.
	return NewHook(svc), ch, remoting.NewRequest(310, ext, body)
}

// BenchmarkAuthSend: the broker's checks of one signed send (the auth
// hook's BeforeRequest): authentication and authorization together, each
// alone, and authorization with a 64-entry ACL.
func BenchmarkAuthSend(b *testing.B) {
	for _, bc := range []struct {
		name    string
		cfg     Config
		entries int
	}{
		{"authn+authz", Config{AuthenticationEnabled: true, AuthorizationEnabled: true}, 1},
		{"authn", Config{AuthenticationEnabled: true}, 1},
		{"authz", Config{AuthorizationEnabled: true}, 1},
		{"authz-64-entries", Config{AuthorizationEnabled: true}, 64},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, ch, req := benchSendHook(b, bc.cfg, bc.entries)
			b.ReportAllocs()
			for b.Loop() {
				if resp := h.BeforeRequest(ch, req); resp != nil {
					b.Fatal(resp.Remark)
				}
			}
		})
	}
}
