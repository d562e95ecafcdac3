package admin_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestAuthCalls(t *testing.T) {
	fc, c := fixture(t)
	admintest.AttachAuth(fc)
	ctx := context.Background()
	if err := c.CreateUser(ctx, ba0, protocol.UserInfo{Username: "alice", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateUser(ctx, ba0, protocol.UserInfo{Username: "alice", Password: "pw"}); !admin.IsCode(err, code.NoPermission) {
		t.Fatalf("second create: %v", err)
	}
	if err := c.UpdateUser(ctx, ba0, protocol.UserInfo{Username: "alice", UserStatus: protocol.UserStatusDisable}); err != nil {
		t.Fatal(err)
	}
	u, err := c.GetUser(ctx, ba0, "alice")
	if err != nil || *u != (protocol.UserInfo{Username: "alice", Password: "pw", UserType: protocol.UserTypeNormal, UserStatus: protocol.UserStatusDisable}) {
		t.Fatalf("GetUser: %+v %v", u, err)
	}
	if u, err := c.GetUser(ctx, bb0, "alice"); u != nil || err != nil {
		t.Fatalf("GetUser on another broker: %+v %v", u, err)
	}
	if us, err := c.ListUser(ctx, ba0, "li"); err != nil || len(us) != 1 {
		t.Fatalf("ListUser: %+v %v", us, err)
	}
	if us, err := c.ListUser(ctx, ba0, "zz"); err != nil || us != nil {
		t.Fatalf("ListUser without match: %+v %v", us, err)
	}

	acl := protocol.NewAclInfo("User:alice", []string{"Topic:T", "Group:G"}, []string{"Pub"}, nil, protocol.DecisionAllow)
	if err := c.CreateACL(ctx, ba0, acl); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateACL(ctx, ba0, protocol.NewAclInfo("User:alice", []string{"Topic:T"}, []string{"Sub"}, []string{"10.0.0.1"}, protocol.DecisionDeny)); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetACL(ctx, ba0, "User:alice")
	want := protocol.AclInfo{Subject: "User:alice", Policies: []protocol.PolicyInfo{{PolicyType: protocol.PolicyTypeCustom, Entries: []protocol.PolicyEntryInfo{
		{Resource: "Topic:T", Actions: []string{"Sub"}, SourceIps: []string{"10.0.0.1"}, Decision: protocol.DecisionDeny},
		{Resource: "Group:G", Actions: []string{"Pub"}, Decision: protocol.DecisionAllow},
	}}}}
	if err != nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("GetACL: %+v %v", got, err)
	}
	if acls, err := c.ListACL(ctx, ba0, "alice", "Group"); err != nil || len(acls) != 1 || len(acls[0].Policies[0].Entries) != 1 {
		t.Fatalf("ListACL: %+v %v", acls, err)
	}
	if err := c.DeleteACL(ctx, ba0, "User:alice", "Group:G"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteACL(ctx, ba0, "User:alice", ""); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetACL(ctx, ba0, "User:alice"); got != nil || err != nil {
		t.Fatalf("GetACL after delete: %+v %v", got, err)
	}
	if err := c.DeleteUser(ctx, ba0, "alice"); err != nil {
		t.Fatal(err)
	}

	// Headers: only the fields given, as Java leaves null ones out.
	var last map[string]string
	for _, cl := range fc.Calls() {
		if cl.Code == code.AuthDeleteACL {
			last = cl.Ext
		}
	}
	if !reflect.DeepEqual(last, map[string]string{protocol.HdrSubject: "User:alice"}) {
		t.Fatalf("DELETE_ACL header %v", last)
	}

	addrs, err := c.ClusterBrokerAddrs(ctx, "C", true)
	if err != nil || !reflect.DeepEqual(addrs, []string{ba0, ba1, bb0}) {
		t.Fatalf("ClusterBrokerAddrs with slaves: %v %v", addrs, err)
	}
	if addrs, err = c.ClusterBrokerAddrs(ctx, "C", false); err != nil || !reflect.DeepEqual(addrs, []string{ba0, bb0}) {
		t.Fatalf("ClusterBrokerAddrs: %v %v", addrs, err)
	}
}

// TestCredentialsSignEveryRequest: with Config.Credentials every request
// (nameserver and broker) carries AccessKey and a valid Signature, and the
// caller's header map is left alone.
func TestCredentialsSignEveryRequest(t *testing.T) {
	fc := admintest.New(ns1)
	fc.AddBroker("C", "broker-a", 0, ba0)
	admintest.AttachAuth(fc)
	cred := credentials.Credentials{AccessKey: "rocketmq", SecretKey: "12345678"}
	c, err := admin.NewWithInvoker(admin.Config{NameServers: []string{ns1}, Credentials: &cred}, fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.GetBrokerClusterInfo(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateUser(ctx, ba0, protocol.UserInfo{Username: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	ext := map[string]string{protocol.HdrUsername: "u"}
	if _, err := c.Invoke(ctx, ba0, code.AuthGetUser, ext, nil); err != nil {
		t.Fatal(err)
	}
	if len(ext) != 1 {
		t.Fatalf("the caller's map was changed: %v", ext)
	}
	for _, cl := range fc.Calls() {
		if cl.Ext[credentials.KeyAccessKey] != "rocketmq" || cl.Ext[credentials.KeySignature] != credentials.Sign(cl.Ext, []byte(cl.Body), "12345678") {
			t.Fatalf("request %d to %s not signed: %v", cl.Code, cl.Addr, cl.Ext)
		}
	}
	if _, err := admin.NewWithInvoker(admin.Config{Credentials: &credentials.Credentials{AccessKey: "x"}}, fc, nil); err == nil {
		t.Fatal("credentials without a secret accepted")
	}
}
