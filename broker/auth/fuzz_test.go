package auth

import (
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// FuzzGRPCCredentials: the authorization metadata of a 5.x request is
// attacker-controlled text; parsing it never panics and a parsed user
// comes only from a Credential field.
func FuzzGRPCCredentials(f *testing.F) {
	f.Add("MQv2-HMAC-SHA1 Credential=alice, SignedHeaders=x-mq-date-time, Signature=0a0b0c", "20261205T101010Z")
	f.Add("MQv2-HMAC-SHA1 Credential=/, Signature=zz", "x")
	f.Add("MQv2-HMAC-SHA1", "")
	f.Add(" Credential==", "1")
	f.Fuzz(func(t *testing.T, authorization, dateTime string) {
		user, _, err := grpcCredentials(GRPCMeta{Authorization: authorization, DateTime: dateTime})
		if err == nil && user != "" && !containsCredential(authorization) {
			t.Fatalf("user %q parsed from %q without a Credential field", user, authorization)
		}
	})
}

func containsCredential(s string) bool {
	for i := 0; i+len("Credential=") <= len(s); i++ {
		if s[i:i+len("Credential=")] == "Credential=" {
			return true
		}
	}
	return false
}

// FuzzResourceAndACL: resource keys and the AclInfo bodies of
// AUTH_CREATE_ACL/UPDATE_ACL come from admins' requests; parsing them never
// panics, and what parses matches itself.
func FuzzResourceAndACL(f *testing.F) {
	f.Add("Topic:T1", []byte(`{"subject":"User:alice","policies":[{"policyType":"CUSTOM","entries":[{"resource":"Topic:T*","actions":["Pub","Sub"],"sourceIps":["127.0.0.1","10.0.0.0/8"],"decision":"Allow"}]}]}`))
	f.Add("Group:*", []byte(`{"subject":"User:","policies":[{"entries":[{"resource":"Cluster:c","actions":["All"],"decision":"Deny"}]}]}`))
	f.Add("Cluster", []byte(`{}`))
	f.Fuzz(func(t *testing.T, key string, body []byte) {
		if r, ok := ParseResource(key); ok && !r.Match(r) {
			t.Fatalf("resource %q (%+v) does not match itself", key, r)
		}
		var ai protocol.AclInfo
		if protocol.Unmarshal(body, &ai) != nil {
			return
		}
		acl, err := aclOf(ai, ai.Subject)
		if err != nil || acl == nil {
			return
		}
		for _, p := range acl.Policies {
			for i := range p.Entries {
				e := &p.Entries[i]
				e.matchIP("127.0.0.1")
				e.matchIP("::1")
			}
		}
	})
}
