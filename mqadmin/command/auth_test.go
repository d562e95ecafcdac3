package command

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestAuthCommandErrors: refusals exit 1 and name the response code; bad
// command lines exit 2 without a request.
func TestAuthCommandErrors(t *testing.T) {
	a := admintest.SampleBrokerA0
	for _, tc := range []struct {
		name   string
		args   []string
		exit   int
		stderr string
	}{
		{"no target", []string{"createUser", "-u", "x", "-p", "y"}, ExitUsage, "brokerAddr clusterName"},
		{"no username", []string{"createUser", "-b", a, "-p", "y"}, ExitUsage, "username"},
		{"update nothing", []string{"updateUser", "-b", a, "-u", "x"}, ExitUsage, "[password userType userStatus]"},
		{"acl without decision", []string{"createAcl", "-b", a, "-s", "User:x", "-r", "Topic:T", "-a", "Pub"}, ExitUsage, "decision"},
		{"copy without target", []string{"copyAcl", "-f", a}, ExitUsage, "toBroker"},
		{"-ak without -sk", []string{"listUser", "-b", a, "-ak", "rocketmq"}, ExitUsage, "-ak and -sk go together"},
		{"missing tools file", []string{"listUser", "-b", a, "--toolsConfig", "/nonexistent/tools.yml"}, ExitError, "read credentials"},
		{"user exists", []string{"createUser", "-b", a, "-u", "alice", "-p", "y"}, ExitError, "AUTH_CREATE_USER to 127.0.0.1:20911 failed: NO_PERMISSION (code 16): The user is existed"},
		{"update missing user", []string{"updateUser", "-b", a, "-u", "nobody", "-p", "y"}, ExitError, "NO_PERMISSION (code 16): The user is not exist"},
		{"acl of a missing subject", []string{"getAcl", "-b", a, "-s", "User:nobody"}, ExitError, "NO_PERMISSION (code 16): The subject is not exist."},
		{"unknown cluster", []string{"getUser", "-c", "Nope", "-u", "alice"}, ExitError, "Make sure the specified clusterName exists"},
		{"cluster write stops at the first failure", []string{"updateUser", "-c", "DefaultCluster", "-u", "alice", "-p", "z"}, ExitError, "AUTH_UPDATE_USER to 127.0.0.1:20921 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := admintest.NewSample()
			admintest.AttachAuth(fc)
			if r := runFake(t, fc, "createUser", "-b", a, "-u", "alice", "-p", "pw", "-n", sampleNS); r.code != 0 {
				t.Fatalf("setup: %+v", r)
			}
			before := len(fc.Calls())
			r := runFake(t, fc, append(tc.args, "-n", sampleNS)...)
			if r.code != tc.exit || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d stderr %q; want %d and %q", r.code, r.stderr, tc.exit, tc.stderr)
			}
			if tc.exit == ExitUsage && len(fc.Calls()) != before {
				t.Fatal("a usage error sent requests")
			}
		})
	}
}

// TestAuthCredentials: -ak/-sk (also before the sub-command), --toolsConfig
// and $ROCKETMQ_HOME/conf/tools.yml sign every request, the flags first;
// without any, requests are unsigned.
func TestAuthCredentials(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	homeFile := filepath.Join(dir, credentials.ToolsConfigFile)
	if err := os.WriteFile(homeFile, []byte("accessKey: homeAK\nsecretKey: homeSK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.yml")
	if err := os.WriteFile(other, []byte("accessKey: fileAK\nsecretKey: fileSK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(dir, "blank.yml")
	if err := os.WriteFile(blank, []byte("accessKey: fileAK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := admintest.SampleBrokerA0
	for _, tc := range []struct {
		name   string
		args   []string
		home   string
		ak, sk string // "" = unsigned
	}{
		{"none", []string{"listUser", "-b", a}, "", "", ""},
		{"flags", []string{"listUser", "-b", a, "-ak", "flagAK", "-sk", "flagSK"}, dir, "flagAK", "flagSK"},
		{"flags first", []string{"-ak", "flagAK", "-sk=flagSK", "listUser", "-b", a}, "", "flagAK", "flagSK"},
		{"long flags", []string{"listUser", "-b", a, "--accessKey", "flagAK", "--secretKey", "flagSK"}, "", "flagAK", "flagSK"},
		{"file", []string{"listUser", "-b", a, "--toolsConfig", other}, dir, "fileAK", "fileSK"},
		{"blank key in file", []string{"listUser", "-b", a, "--toolsConfig", blank}, dir, "", ""},
		{"ROCKETMQ_HOME", []string{"listUser", "-b", a}, dir, "homeAK", "homeSK"},
		{"ROCKETMQ_HOME without tools.yml", []string{"listUser", "-b", a}, t.TempDir(), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := admintest.NewSample()
			admintest.AttachAuth(fc)
			var out, errb bytes.Buffer
			env := fakeEnv(fc, &out, &errb)
			env.Getenv = func(k string) string {
				if k == "ROCKETMQ_HOME" {
					return tc.home
				}
				return ""
			}
			if code := Main(context.Background(), append(tc.args, "-n", sampleNS), env); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			calls := fc.Calls()
			if len(calls) == 0 {
				t.Fatal("no request")
			}
			for _, c := range calls {
				if got := c.Ext[credentials.KeyAccessKey]; got != tc.ak {
					t.Fatalf("request %d to %s: AccessKey %q, want %q", c.Code, c.Addr, got, tc.ak)
				}
				if tc.ak == "" {
					if _, ok := c.Ext[credentials.KeySignature]; ok {
						t.Fatal("unsigned request has a Signature")
					}
					continue
				}
				want := credentials.Sign(c.Ext, []byte(c.Body), tc.sk)
				if c.Ext[credentials.KeySignature] != want {
					t.Fatalf("request %d: Signature %q, want %q", c.Code, c.Ext[credentials.KeySignature], want)
				}
			}
		})
	}
}

// TestAuthJSON: --output json prints the bodies and the brokers written.
func TestAuthJSON(t *testing.T) {
	fc := admintest.NewSample()
	admintest.AttachAuth(fc)
	a := admintest.SampleBrokerA0
	run := func(args ...string) string {
		t.Helper()
		r := runFake(t, fc, append(args, "-n", sampleNS, "--output", "json")...)
		if r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
		return r.stdout
	}
	var w struct{ Brokers []string }
	if err := json.Unmarshal([]byte(run("createUser", "-c", "DefaultCluster", "-u", "bob", "-p", "pw")), &w); err != nil || len(w.Brokers) != 3 {
		t.Fatalf("createUser: %+v %v", w, err)
	}
	var u protocol.UserInfo
	if err := json.Unmarshal([]byte(run("getUser", "-b", a, "-u", "bob")), &u); err != nil || u.Password != "pw" || u.UserType != "Normal" {
		t.Fatalf("getUser: %+v %v", u, err)
	}
	if out := strings.TrimSpace(run("getUser", "-b", a, "-u", "nobody")); out != "null" {
		t.Fatalf("getUser of nobody: %s", out)
	}
	run("createAcl", "-b", a, "-s", "User:bob", "-r", "Topic:T", "-a", "Pub", "-d", "Allow")
	var acls []protocol.AclInfo
	if err := json.Unmarshal([]byte(run("listAcl", "-b", a)), &acls); err != nil || len(acls) != 1 || acls[0].Policies[0].Entries[0].Resource != "Topic:T" {
		t.Fatalf("listAcl: %+v %v", acls, err)
	}
	if out := strings.TrimSpace(run("listUser", "-b", admintest.SampleBrokerB0, "-f", "zzz")); out != "[]" {
		t.Fatalf("listUser with no match: %s", out)
	}
}

// TestAuthOptionalBody: a broker that answers SUCCESS without a body (no
// such user or ACL) prints nothing, as the Java tool.
func TestAuthOptionalBody(t *testing.T) {
	fc := admintest.NewSample()
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code >= code.AuthCreateUser && req.Code <= code.AuthListACL {
			return remoting.NewResponse(req, code.Success, ""), true
		}
		return nil, false
	}
	for _, args := range [][]string{
		{"getUser", "-b", admintest.SampleBrokerA0, "-u", "x"},
		{"listUser", "-c", "DefaultCluster"},
		{"getAcl", "-c", "DefaultCluster", "-s", "User:x"},
		{"listAcl", "-b", admintest.SampleBrokerA0},
		{"copyUser", "-f", admintest.SampleBrokerA0, "-t", admintest.SampleBrokerB0},
	} {
		if r := runFake(t, fc, append(args, "-n", sampleNS)...); r.code != 0 || r.stdout != "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
}
