package credentials

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/rmqgo/rmq/remoting"
)

func TestSign(t *testing.T) {
	// base64(HMAC-SHA1("secret", "ak" + "T" + "body")): values in key order.
	got := Sign(map[string]string{"topic": "T", "AccessKey": "ak", "Signature": "old"}, []byte("body"), "secret")
	if want := "henhmmfv9X7aCpzl6f+4e/lxhE4="; got != want {
		t.Fatalf("signature = %s, want %s", got, want)
	}
}

func TestSignRequest(t *testing.T) {
	req := remoting.NewRequest(3004, map[string]string{"username": "alice"}, nil)
	Credentials{AccessKey: "rocketmq", SecretKey: "12345678"}.SignRequest(req)
	if req.ExtFields[KeyAccessKey] != "rocketmq" {
		t.Fatalf("AccessKey = %q", req.ExtFields[KeyAccessKey])
	}
	want := Sign(map[string]string{"username": "alice", "AccessKey": "rocketmq"}, nil, "12345678")
	if req.ExtFields[KeySignature] != want {
		t.Fatalf("Signature = %q, want %q", req.ExtFields[KeySignature], want)
	}
	resp := remoting.NewResponse(req, 0, "")
	Credentials{AccessKey: "x", SecretKey: "y"}.SignRequest(resp)
	if _, ok := resp.ExtFields[KeySignature]; ok {
		t.Fatal("a response was signed")
	}
}

// TestHookKeyedOnce: NewHook's copies of its keyed HMAC sign each request
// as SignRequest does (the copy starts clean every time), with and without
// a security token.
func TestHookKeyedOnce(t *testing.T) {
	for _, c := range []Credentials{{AccessKey: "ak", SecretKey: "sk"}, {AccessKey: "ak", SecretKey: "sk", SecurityToken: "tok"}} {
		h := NewHook(c)
		for i, topic := range []string{"T1", "T2", "T1"} {
			got := remoting.NewRequest(310, map[string]string{"b": topic}, []byte(topic))
			want := remoting.NewRequest(310, map[string]string{"b": topic}, []byte(topic))
			h.BeforeRequest(nil, got)
			c.SignRequest(want)
			if got.ExtFields[KeySignature] != want.ExtFields[KeySignature] || got.ExtFields[KeySecurityToken] != c.SecurityToken {
				t.Fatalf("request %d: %v, want %v", i, got.ExtFields, want.ExtFields)
			}
		}
	}
}

// refSign is the signature computed the plain way: a fresh HMAC, the keys
// sorted, the values concatenated.
func refSign(ext map[string]string, body []byte, secret string, skip ...string) string {
	var keys []string
	for k := range ext {
		if k != KeySignature && !slices.Contains(skip, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	mac := hmac.New(sha1.New, []byte(secret))
	for _, k := range keys {
		mac.Write([]byte(ext[k]))
	}
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestKey: a Key's pooled signers sign and verify as the plain computation
// does, request after request (each starts from the keyed state and empty
// buffers) and from many goroutines at once: few and many fields (past
// the insertion sort's 64), skipped fields, no body, a secret longer than
// a block.
func TestKey(t *testing.T) {
	many := map[string]string{}
	for i := range 100 {
		many[fmt.Sprintf("k%03d", 99-i)] = fmt.Sprint(i)
	}
	reqs := []struct {
		ext  map[string]string
		body []byte
		skip []string
	}{
		{map[string]string{"topic": "T", "AccessKey": "ak", "Signature": "old"}, []byte("body"), nil},
		{map[string]string{"b": "T2", "a": "PG", "AccessKey": "ak", "SecurityToken": "tok"}, make([]byte, 1024), []string{KeySecurityToken}},
		{map[string]string{"b": "T2", "_UNIQUE_KEY_QUERY": "true", "z": "", "é": "x"}, nil, []string{"_UNIQUE_KEY_QUERY", KeySecurityToken}},
		{many, []byte("m"), nil},
	}
	for _, secret := range []string{"12345678", string(make([]byte, 100))} {
		k := NewKey(secret)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 50 {
					r := reqs[(i+g)%len(reqs)]
					want := refSign(r.ext, r.body, secret, r.skip...)
					if got := k.SignRequest(r.ext, r.body, r.skip...); got != want {
						t.Errorf("request %d: signature %s, want %s", (i+g)%len(reqs), got, want)
						return
					}
					if !k.VerifyRequest(want, r.ext, r.body, r.skip...) {
						t.Errorf("request %d: its signature does not verify", (i+g)%len(reqs))
						return
					}
					if k.VerifyRequest(want, r.ext, append(slices.Clone(r.body), 'x'), r.skip...) || k.VerifyRequest(want[1:], r.ext, r.body, r.skip...) {
						t.Errorf("request %d: another body or a cut signature verifies", (i+g)%len(reqs))
						return
					}
				}
			})
		}
		wg.Wait()
		mac := hmac.New(sha1.New, []byte(secret))
		mac.Write([]byte("20240101T000000Z"))
		sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
		if !k.VerifyBytes(sig, "20240101T000000Z") || k.VerifyBytes(sig, "20240101T000001Z") {
			t.Fatal("VerifyBytes does not check the HMAC of its data")
		}
	}
	if got, want := Sign(many, nil, "s"), refSign(many, nil, "s"); got != want {
		t.Fatalf("Sign of 100 fields = %s, want %s", got, want)
	}
}

func TestReadToolsConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       *Credentials
	}{
		{"apache default", "# license\n\n\naccessKey: rocketmq2\nsecretKey: 12345678\n", &Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}},
		{"quoted", "accessKey: \"ak x\"\nsecretKey: 'sk' \n", &Credentials{AccessKey: "ak x", SecretKey: "sk"}},
		{"comment and nested", "accessKey: ak # mine\nsecretKey: sk\nother:\n  accessKey: no\n", &Credentials{AccessKey: "ak", SecretKey: "sk"}},
		{"blank secret", "accessKey: ak\nsecretKey:\n", nil},
		{"empty", "", nil},
	} {
		p := filepath.Join(dir, tc.name+".yml")
		if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadToolsConfig(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if _, err := ReadToolsConfig(filepath.Join(dir, "missing.yml")); err == nil {
		t.Fatal("a missing file must be an error")
	}
	p := filepath.Join(dir, "bad.yml")
	_ = os.WriteFile(p, []byte("accessKey ak\n"), 0o644)
	if _, err := ReadToolsConfig(p); err == nil {
		t.Fatal("a line without ':' must be an error")
	}
}

// BenchmarkKeySignRequest: signing a SEND_MESSAGE_V2 header (14 fields and
// AccessKey) and a 1 KiB body with a Key, as a producer does per send.
func BenchmarkKeySignRequest(b *testing.B) {
	ext := map[string]string{"a": "pg", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0",
		"i": "UNIQ_KEY\x0101000000000000000000000001\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a", KeyAccessKey: "bench"}
	body := make([]byte, 1024)
	k := NewKey("bench-secret-1")
	b.ReportAllocs()
	for b.Loop() {
		s := k.get()
		s.Request(ext, body)
		k.put(s)
	}
}
