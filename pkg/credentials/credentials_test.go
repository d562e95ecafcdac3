package credentials

import (
	"os"
	"path/filepath"
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
