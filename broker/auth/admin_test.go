package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type adminRig struct {
	t   *testing.T
	svc *Service
	h   map[int32]remoting.Handler
}

func newAdminRig(t *testing.T, path string) *adminRig {
	t.Helper()
	st, err := OpenStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(Config{ClusterName: "C1"}, st, nil)
	return &adminRig{t: t, svc: svc, h: svc.Handlers()}
}

func (r *adminRig) call(c int32, ext map[string]string, body any) *remoting.Command {
	r.t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case string:
		b = []byte(v)
	default:
		b = protocol.MustMarshal(v)
	}
	resp, err := r.h[c](context.Background(), nil, remoting.NewRequest(c, ext, b))
	if err != nil {
		resp = remoting.ResponseFromError(remoting.NewRequest(c, ext, b), err)
	}
	return resp
}

func (r *adminRig) expect(resp *remoting.Command, wantCode int32, wantRemark string) {
	r.t.Helper()
	if resp.Code != wantCode || resp.Remark != wantRemark {
		r.t.Fatalf("answer %d %q, want %d %q", resp.Code, resp.Remark, wantCode, wantRemark)
	}
}

func TestAdminUsers(t *testing.T) {
	r := newAdminRig(t, "")
	u := func(name string) map[string]string { return map[string]string{"username": name} }
	r.expect(r.call(code.AuthCreateUser, u("alice"), protocol.UserInfo{Password: "pw1"}), code.Success, "")
	r.expect(r.call(code.AuthCreateUser, u("alice"), protocol.UserInfo{Password: "pw1"}), code.NoPermission, "The user is existed")
	r.expect(r.call(code.AuthCreateUser, u("nopw"), protocol.UserInfo{}), code.NoPermission, "password can not be blank")
	r.expect(r.call(code.AuthCreateUser, nil, protocol.UserInfo{Password: "x"}), code.InvalidParameter, "The username is blank")
	r.expect(r.call(code.AuthUpdateUser, u("ghost"), protocol.UserInfo{Password: "x"}), code.NoPermission, "The user is not exist")

	// A normal user may not create a super user.
	r.expect(r.call(code.AuthCreateUser, u("bob"), protocol.UserInfo{Password: "pw2", UserType: "Normal"}), code.Success, "")
	asBob := map[string]string{"username": "eve", FieldAccessKey: "bob"}
	r.expect(r.call(code.AuthCreateUser, asBob, protocol.UserInfo{Password: "x", UserType: "Super"}), code.SystemError, "The super user can only be create by super user")

	r.expect(r.call(code.AuthUpdateUser, u("alice"), protocol.UserInfo{UserStatus: "disable"}), code.Success, "")
	resp := r.call(code.AuthGetUser, u("alice"), nil)
	r.expect(resp, code.Success, "")
	var got protocol.UserInfo
	if err := json.Unmarshal(resp.Body, &got); err != nil {
		t.Fatal(err)
	}
	if want := (protocol.UserInfo{Username: "alice", Password: "pw1", UserType: "Normal", UserStatus: "disable"}); got != want {
		t.Fatalf("user %+v, want %+v", got, want)
	}
	if resp := r.call(code.AuthGetUser, u("ghost"), nil); resp.Code != code.Success || len(resp.Body) != 0 {
		t.Fatalf("missing user: %d %q", resp.Code, resp.Body)
	}
	resp = r.call(code.AuthListUser, map[string]string{"filter": "li"}, nil)
	var list []protocol.UserInfo
	if err := json.Unmarshal(resp.Body, &list); err != nil || len(list) != 1 || list[0].Username != "alice" {
		t.Fatalf("list %s: %v", resp.Body, err)
	}
	r.expect(r.call(code.AuthDeleteUser, u("alice"), nil), code.Success, "")
	r.expect(r.call(code.AuthDeleteUser, u("alice"), nil), code.Success, "") // already gone: Apache answers SUCCESS
	if _, ok := r.svc.Store().User("alice"); ok {
		t.Fatal("alice not deleted")
	}
}

func aclBody(subject string, decision string, resources ...string) protocol.AclInfo {
	var entries []protocol.PolicyEntryInfo
	for _, res := range resources {
		entries = append(entries, protocol.PolicyEntryInfo{Resource: res, Actions: []string{"Pub", "Sub"}, Decision: decision})
	}
	return protocol.AclInfo{Subject: subject, Policies: []protocol.PolicyInfo{{PolicyType: "Custom", Entries: entries}}}
}

func TestAdminACLsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	r := newAdminRig(t, path)
	sub := func(s string) map[string]string { return map[string]string{"subject": s} }
	r.expect(r.call(code.AuthCreateACL, sub("User:alice"), aclBody("User:alice", "Allow", "Topic:T1")), code.NoPermission, "The subject of User:alice is not exist.")
	r.expect(r.call(code.AuthCreateUser, map[string]string{"username": "alice"}, protocol.UserInfo{Password: "pw"}), code.Success, "")
	r.expect(r.call(code.AuthCreateACL, sub("User:alice"), aclBody("", "Allow", "Topic:T1", "Group:G*")), code.Success, "")
	r.expect(r.call(code.AuthUpdateACL, sub("User:alice"), aclBody("User:alice", "Deny", "Topic:T1", "Topic:T2")), code.Success, "")
	r.expect(r.call(code.AuthCreateACL, sub("User:alice"), aclBody("User:alice", "Maybe", "Topic:T3")), code.NoPermission, "The decision is null or illegal.")
	r.expect(r.call(code.AuthCreateACL, sub("User:alice"), protocol.AclInfo{Policies: []protocol.PolicyInfo{{Entries: []protocol.PolicyEntryInfo{{Resource: "Topic:T", Actions: []string{"Pub"}, SourceIps: []string{"10.0.0.300"}, Decision: "Allow"}}}}}), code.NoPermission, "The source ip is invalid.")

	want := protocol.AclInfo{Subject: "User:alice", Policies: []protocol.PolicyInfo{{PolicyType: "Custom", Entries: []protocol.PolicyEntryInfo{
		{Resource: "Topic:T1", Actions: []string{"Pub", "Sub"}, Decision: "Deny"},
		{Resource: "Group:G*", Actions: []string{"Pub", "Sub"}, Decision: "Allow"},
		{Resource: "Topic:T2", Actions: []string{"Pub", "Sub"}, Decision: "Deny"},
	}}}}
	getACL := func(r *adminRig) protocol.AclInfo {
		t.Helper()
		resp := r.call(code.AuthGetACL, sub("User:alice"), nil)
		r.expect(resp, code.Success, "")
		var got protocol.AclInfo
		if err := json.Unmarshal(resp.Body, &got); err != nil {
			t.Fatalf("%s: %v", resp.Body, err)
		}
		return got
	}
	if got := getACL(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("acl %+v\nwant %+v", got, want)
	}

	// A second store on the same file (a restart) reads the same.
	r2 := newAdminRig(t, path)
	if got := getACL(r2); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopening: %+v", got)
	}
	if u, ok := r2.svc.Store().User("alice"); !ok || u.Password != "pw" {
		t.Fatalf("user after reopening: %+v %v", u, ok)
	}

	resp := r2.call(code.AuthListACL, map[string]string{"resourceFilter": "T2"}, nil)
	var list []protocol.AclInfo
	if err := json.Unmarshal(resp.Body, &list); err != nil || len(list) != 1 || len(list[0].Policies[0].Entries) != 1 || list[0].Policies[0].Entries[0].Resource != "Topic:T2" {
		t.Fatalf("list by resource: %s %v", resp.Body, err)
	}

	// Deleting one resource keeps the others; deleting without resource
	// drops the ACL.
	r2.expect(r2.call(code.AuthDeleteACL, map[string]string{"subject": "User:alice", "resource": "Topic:T1"}, nil), code.Success, "")
	if got := getACL(r2); len(got.Policies[0].Entries) != 2 {
		t.Fatalf("after deleting one resource: %+v", got)
	}
	r2.expect(r2.call(code.AuthDeleteACL, sub("User:alice"), nil), code.Success, "")
	r2.expect(r2.call(code.AuthDeleteACL, sub("User:alice"), nil), code.NoPermission, "The acl is not exist.")
	r2.expect(r2.call(code.AuthDeleteACL, sub("User:ghost"), nil), code.NoPermission, "The subject is not exist.")
	r2.expect(r2.call(code.AuthGetACL, sub("User:ghost"), nil), code.NoPermission, "The subject is not exist.")
	if resp := r2.call(code.AuthGetACL, sub("User:alice"), nil); resp.Code != code.Success || len(resp.Body) != 0 {
		t.Fatalf("deleted acl: %d %s", resp.Code, resp.Body)
	}
	// Deleting the user drops its ACL too.
	r2.expect(r2.call(code.AuthCreateACL, sub("User:alice"), aclBody("", "Allow", "Topic:T1")), code.Success, "")
	r2.expect(r2.call(code.AuthDeleteUser, map[string]string{"username": "alice"}, nil), code.Success, "")
	if r2.svc.Store().ACL("User:alice") != nil {
		t.Fatal("ACL of a deleted user kept")
	}
}

func TestInitUsers(t *testing.T) {
	r := newAdminRig(t, "")
	if err := r.svc.InitUsers(`{"username":"rocketmq","password":"12345678"}`, `{"accessKey":"inner","secretKey":"innersecret"}`); err != nil {
		t.Fatal(err)
	}
	for name, pw := range map[string]string{"rocketmq": "12345678", "inner": "innersecret"} {
		u, ok := r.svc.Store().User(name)
		if !ok || u.Password != pw || u.Type != UserSuper || u.Status != StatusEnable {
			t.Fatalf("%s: %+v %v", name, u, ok)
		}
	}
	// An existing user is left as it is.
	r.expect(r.call(code.AuthUpdateUser, map[string]string{"username": "rocketmq"}, protocol.UserInfo{Password: "changed"}), code.Success, "")
	if err := r.svc.InitUsers(`{"username":"rocketmq","password":"12345678"}`, ""); err != nil {
		t.Fatal(err)
	}
	if u, _ := r.svc.Store().User("rocketmq"); u.Password != "changed" {
		t.Fatalf("init user overwrote the stored one: %+v", u)
	}
	if err := r.svc.InitUsers(`{bad`, ""); err == nil {
		t.Fatal("bad initAuthenticationUser accepted")
	}
}

// TestVerdictsFollowChanges: the authorization verdicts a snapshot
// remembers and the keyed passwords never outlive a change. Each step asks
// twice (the second answer comes from the cache), changes users or ACLs
// through the admin codes or the slave copy, and the very next request
// sees the change; the cache is keyed by action and source address too,
// and stays bounded.
func TestVerdictsFollowChanges(t *testing.T) {
	r := newAdminRig(t, "")
	u := map[string]string{"username": "alice"}
	acl := func(res, decision string, ips ...string) protocol.AclInfo {
		return protocol.AclInfo{Subject: "User:alice", Policies: []protocol.PolicyInfo{{PolicyType: "Custom",
			Entries: []protocol.PolicyEntryInfo{{Resource: res, Actions: []string{"Pub"}, SourceIps: ips, Decision: decision}}}}}
	}
	pub, sub := []Action{ActPub}, []Action{ActSub}
	ask := func(step string, ip string, acts []Action, want string) {
		t.Helper()
		for i := range 2 {
			_, err := r.svc.Authorize(Request{Username: "alice", HasUser: true, SourceIP: ip}, []Check{{Resource: TopicResource("T1"), Actions: acts}})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != want {
				t.Fatalf("%s (ask %d): %q, want %q", step, i+1, got, want)
			}
		}
	}
	const noMatch = "User:alice has no permission to access Topic:T1 from 127.0.0.1, no matched policies."
	r.expect(r.call(code.AuthCreateUser, u, protocol.UserInfo{Password: "pw1"}), code.Success, "")
	ask("no acl", "127.0.0.1", pub, noMatch)
	r.expect(r.call(code.AuthCreateACL, map[string]string{"subject": "User:alice"}, acl("Topic:T1", "Allow")), code.Success, "")
	ask("allowed", "127.0.0.1", pub, "")
	ask("another action", "127.0.0.1", sub, noMatch)
	r.expect(r.call(code.AuthUpdateACL, map[string]string{"subject": "User:alice"}, acl("Topic:T1", "Allow", "127.0.0.0/8")), code.Success, "")
	ask("inside the source range", "127.0.0.1", pub, "")
	ask("outside the source range", "10.0.0.1", pub, "User:alice has no permission to access Topic:T1 from 10.0.0.1, no matched policies.")
	ask("inside again", "127.0.0.1", pub, "")
	r.expect(r.call(code.AuthDeleteACL, map[string]string{"subject": "User:alice", "resource": "Topic:T1"}, nil), code.Success, "")
	ask("acl deleted", "127.0.0.1", pub, noMatch)
	r.expect(r.call(code.AuthCreateACL, map[string]string{"subject": "User:alice"}, acl("Topic:T*", "Deny")), code.Success, "")
	ask("denied", "127.0.0.1", pub, "User:alice has no permission to access Topic:T1 from 127.0.0.1, the decision is deny.")
	r.expect(r.call(code.AuthUpdateUser, u, protocol.UserInfo{UserType: "Super"}), code.Success, "")
	ask("now a super user", "127.0.0.1", pub, "")
	r.expect(r.call(code.AuthUpdateUser, u, protocol.UserInfo{UserType: "Normal"}), code.Success, "")
	ask("normal again", "127.0.0.1", pub, "User:alice has no permission to access Topic:T1 from 127.0.0.1, the decision is deny.")
	r.expect(r.call(code.AuthDeleteUser, u, nil), code.Success, "")
	ask("user deleted", "127.0.0.1", pub, "User:alice not found.")
	if _, err := r.svc.Store().ReplaceAll([]protocol.UserInfo{{Username: "alice", Password: "pw2", UserType: "Normal"}}, []protocol.AclInfo{acl("Topic:T1", "Allow")}); err != nil {
		t.Fatal(err)
	}
	ask("copied from the master", "127.0.0.1", pub, "")

	// The keyed password follows the user too.
	ext := signed("alice", "pw2", map[string]string{"b": "T1"}, "x")
	for i := range 2 {
		if _, err := r.svc.AuthenticateRemoting(310, 500, ext, []byte("x")); err != nil {
			t.Fatalf("signed with the password (%d): %v", i+1, err)
		}
	}
	r.expect(r.call(code.AuthUpdateUser, u, protocol.UserInfo{Password: "pw3"}), code.Success, "")
	if _, err := r.svc.AuthenticateRemoting(310, 500, ext, []byte("x")); err == nil || err.Error() != msgBadSignature {
		t.Fatalf("signed with the old password: %v", err)
	}

	for i := range maxDecisions + 10 {
		_, _ = r.svc.Authorize(Request{Username: "alice", HasUser: true, SourceIP: "127.0.0.1"}, []Check{{Resource: TopicResource(fmt.Sprint("T", i)), Actions: pub}})
	}
	if n := len(r.svc.Store().load().decisions.m); n > maxDecisions || n == 0 {
		t.Fatalf("%d verdicts remembered, want 1..%d", n, maxDecisions)
	}
}
