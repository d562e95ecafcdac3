package auth

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const plainACL = `globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - broken
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
`

func TestMigrateV1(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf", "acl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "conf", "plain_acl.yml"), []byte(plainACL), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second file naming RocketMQ again: the first one read wins
	// (conf/acl before plain_acl.yml).
	other := "accounts:\n  - accessKey: RocketMQ\n    secretKey: fromacldir\n  - accessKey: third\n    secretKey: s3\n"
	if err := os.WriteFile(filepath.Join(home, "conf", "acl", "more.yml"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := OpenStore("", nil)
	svc := NewService(Config{}, st, nil)
	if err := svc.MigrateV1(home, nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]User{
		"RocketMQ":  {Username: "RocketMQ", Password: "fromacldir", Type: UserNormal, Status: StatusEnable},
		"rocketmq2": {Username: "rocketmq2", Password: "12345678", Type: UserSuper, Status: StatusEnable},
		"third":     {Username: "third", Password: "s3", Type: UserNormal, Status: StatusEnable},
	} {
		if u, ok := st.User(name); !ok || u != want {
			t.Errorf("user %s: %+v %v, want %+v", name, u, ok, want)
		}
	}
	if st.ACL("User:RocketMQ") != nil || st.ACL("User:rocketmq2") != nil {
		t.Fatal("accounts without permissions got ACLs")
	}

	// Migrating again leaves existing users as they are.
	if err := svc.CreateUser(User{Username: "x", Password: "y"}); err != nil {
		t.Fatal(err)
	}
	before := st.Users("")
	if err := svc.MigrateV1(home, nil); err != nil {
		t.Fatal(err)
	}
	if after := st.Users(""); !reflect.DeepEqual(before, after) {
		t.Fatalf("second migration changed users: %+v", after)
	}

	// A fresh store takes the permissions of plain_acl.yml alone.
	if err := os.RemoveAll(filepath.Join(home, "conf", "acl")); err != nil {
		t.Fatal(err)
	}
	st2, _ := OpenStore("", nil)
	svc2 := NewService(Config{}, st2, nil)
	if err := svc2.MigrateV1(home, nil); err != nil {
		t.Fatal(err)
	}
	got := aclInfo(st2.ACL("User:RocketMQ"))
	want := aclInfo(&ACL{Subject: "User:RocketMQ", Policies: []Policy{
		{Type: PolicyCustom, Entries: []Entry{
			{Resource: TopicResource("topicA"), Actions: []Action{ActAll}, Decision: Deny},
			{Resource: TopicResource("topicB"), Actions: []Action{ActPub, ActSub}, Decision: Allow},
			{Resource: TopicResource("topicC"), Actions: []Action{ActSub}, Decision: Allow},
			{Resource: GroupResource("groupA"), Actions: []Action{ActAll}, Decision: Deny},
			{Resource: GroupResource("groupB"), Actions: []Action{ActPub, ActSub}, Decision: Allow},
		}},
		{Type: PolicyDefault, Entries: []Entry{
			{Resource: Resource{Type: ResTopic, Pattern: PatAny}, Actions: []Action{ActAll}, Decision: Deny},
			{Resource: Resource{Type: ResGroup, Pattern: PatAny}, Actions: []Action{ActSub}, Decision: Allow},
		}},
	}})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("migrated ACL\n%+v\nwant\n%+v", got, want)
	}
	// The Default policy applies where no Custom entry matches.
	svc2.cfg.AuthorizationEnabled = true
	r := Request{Username: "RocketMQ", HasUser: true, SourceIP: "127.0.0.1", RPCCode: "10"}
	if _, err := svc2.Authorize(r, []Check{{TopicResource("topicB"), []Action{ActPub}}}); err != nil {
		t.Errorf("topicB Pub: %v", err)
	}
	if _, err := svc2.Authorize(r, []Check{{TopicResource("other"), []Action{ActPub}}}); err == nil {
		t.Error("other topic Pub allowed (defaultTopicPerm DENY)")
	}
	if _, err := svc2.Authorize(r, []Check{{GroupResource("anyGroup"), []Action{ActSub}}}); err != nil {
		t.Errorf("any group Sub: %v", err)
	}
}
