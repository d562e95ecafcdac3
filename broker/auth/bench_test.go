package auth

import (
	"maps"
	"testing"

	"github.com/rmqgo/rmq/remoting"
)

// BenchmarkAuthenticateAndAuthorizeSend: the checks of one signed
// SEND_MESSAGE_V2 (1 KiB body, a typical header) by a normal user with a
// prefix ACL.
func BenchmarkAuthenticateAndAuthorizeSend(b *testing.B) {
	st, _ := OpenStore("", nil)
	svc := NewService(Config{AuthenticationEnabled: true, AuthorizationEnabled: true}, st, nil)
	if err := svc.CreateUser(User{Username: "alice", Password: "alicepw"}); err != nil {
		b.Fatal(err)
	}
	r, _ := ParseResource("Topic:Bench*")
	if err := svc.PutACL(&ACL{Subject: "User:alice", Policies: []Policy{{Type: PolicyCustom, Entries: []Entry{{Resource: r, Actions: []Action{ActPub}, Decision: Allow}}}}}); err != nil {
		b.Fatal(err)
	}
	ext := map[string]string{"a": "pg", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0",
		"i": "UNIQ_KEY\x0101000000000000000000000001\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a"}
	body := make([]byte, 1024)
	ext = signed("alice", "alicepw", ext, string(body))
	h := NewHook(svc)
	ch := remoting.NewLocalChannel("127.0.0.1:10911", "127.0.0.1:50000", func(*remoting.Command) {})
	b.ReportAllocs()
	for b.Loop() {
		req := remoting.NewRequest(310, maps.Clone(ext), body)
		if resp := h.BeforeRequest(ch, req); resp != nil {
			b.Fatal(resp.Remark)
		}
	}
}
