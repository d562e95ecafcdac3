package protocol

import (
	"reflect"
	"testing"
)

// Bodies as Apache RocketMQ 5.5.0's broker wrote them (AUTH_GET_USER,
// AUTH_LIST_USER, AUTH_GET_ACL; tests/interop TestAuthAdminApache logs
// them): fastjson, keys in alphabetical order, null fields left out.
const (
	apacheUser  = `{"password":"pw-carol","userStatus":"enable","userType":"Normal","username":"carol_it"}`
	apacheUsers = `[` + apacheUser + `]`
	apacheACL   = `{"policies":[{"entries":[{"actions":["Sub","Get"],"decision":"Allow","resource":"Topic:T"},` +
		`{"actions":["Sub","Get"],"decision":"Allow","resource":"Group:*"},` +
		`{"actions":["Pub"],"decision":"Deny","resource":"Topic:U","sourceIps":["127.0.0.1","10.0.0.0/8"]}],` +
		`"policyType":"Custom"}],"subject":"User:carol_it"}`
)

func TestAuthBodiesApacheRoundTrip(t *testing.T) {
	var u UserInfo
	var us []UserInfo
	var acl AclInfo
	var acls []AclInfo
	for _, tc := range []struct {
		json string
		v    any
	}{
		{apacheUser, &u},
		{apacheUsers, &us},
		{apacheACL, &acl},
		{"[" + apacheACL + "]", &acls},
	} {
		if err := Unmarshal([]byte(tc.json), tc.v); err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if got := string(MustMarshal(tc.v)); got != tc.json {
			t.Errorf("round trip:\n got %s\nwant %s", got, tc.json)
		}
	}
	if u != (UserInfo{Password: "pw-carol", UserStatus: UserStatusEnable, UserType: UserTypeNormal, Username: "carol_it"}) {
		t.Errorf("user %+v", u)
	}
	want := PolicyEntryInfo{Actions: []string{"Pub"}, Decision: DecisionDeny, Resource: "Topic:U", SourceIps: []string{"127.0.0.1", "10.0.0.0/8"}}
	if acl.Subject != "User:carol_it" || len(acl.Policies) != 1 || acl.Policies[0].PolicyType != PolicyTypeCustom ||
		len(acl.Policies[0].Entries) != 3 || !reflect.DeepEqual(acl.Policies[0].Entries[2], want) || acl.Policies[0].Entries[0].SourceIps != nil {
		t.Errorf("acl %+v", acl)
	}
}

// TestAuthBodiesAsJavaToolSends: the bodies mqadmin sends are Apache's
// UserInfo.of / AclInfo.of as fastjson writes them: absent options are
// absent keys, the policy type is unset.
func TestAuthBodiesAsJavaToolSends(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{UserInfo{Username: "alice", Password: "pw"}, `{"password":"pw","username":"alice"}`},
		{UserInfo{Username: "alice", UserStatus: "disable"}, `{"userStatus":"disable","username":"alice"}`},
		{NewAclInfo("User:alice", []string{"Topic:T1", "Group:G1"}, []string{"Pub", "Sub"}, nil, "Allow"),
			`{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:T1"},` +
				`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:G1"}]}],"subject":"User:alice"}`},
		{NewAclInfo("User:bob", []string{"Topic:pre*"}, []string{"Pub"}, []string{"127.0.0.1"}, "Deny"),
			`{"policies":[{"entries":[{"actions":["Pub"],"decision":"Deny","resource":"Topic:pre*","sourceIps":["127.0.0.1"]}]}],"subject":"User:bob"}`},
	} {
		if got := string(MustMarshal(tc.v)); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
