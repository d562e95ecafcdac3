package auth

import (
	"errors"
	"maps"
	"testing"
)

// Signatures computed independently (Python hmac/base64) over the values
// sorted by key followed by the body.
func TestSignRemoting(t *testing.T) {
	ext := map[string]string{"AccessKey": "alice", "b": "T1", "a": "PG", "Signature": "ignored"}
	withToken := maps.Clone(ext)
	withToken["SecurityToken"] = "tok"
	for _, tc := range []struct {
		name      string
		ext       map[string]string
		body      string
		dropToken bool
		want      string
	}{
		{"fields and body", ext, "hello", false, "+dpRkZGR6BptS7fnpztsfV8n/mo="},
		{"no body", ext, "", false, "PYsha6ySO6R0iVo7qkLKlng8CM0="},
		{"token signed (Java)", withToken, "hello", false, "A5RJ6kHx638OkRB9253gQ8ZMQ6U="},
		{"token not signed (client-go)", withToken, "hello", true, "+dpRkZGR6BptS7fnpztsfV8n/mo="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SignRemoting(tc.ext, []byte(tc.body), "12345678", false, tc.dropToken); got != tc.want {
				t.Fatalf("signature %q, want %q", got, tc.want)
			}
		})
	}
}

func testService(t *testing.T, cfg Config) *Service {
	t.Helper()
	st, err := OpenStore("", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(cfg, st, nil)
	for _, u := range []User{
		{Username: "alice", Password: "12345678"},
		{Username: "bob", Password: "secret-b", Status: StatusDisable},
		{Username: "root", Password: "rootpass", Type: UserSuper},
	} {
		if err := s.CreateUser(u); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func signed(user, secret string, ext map[string]string, body string) map[string]string {
	out := maps.Clone(ext)
	out[FieldAccessKey] = user
	out[FieldSignature] = SignRemoting(out, []byte(body), secret, false, false)
	return out
}

func TestAuthenticateRemoting(t *testing.T) {
	s := testService(t, Config{AuthenticationEnabled: true, AuthenticationWhitelist: " 105 , 34"})
	base := map[string]string{"a": "PG", "b": "T1"}
	clientGo := signed("alice", "12345678", base, "x")
	clientGo[FieldSecurityToken] = "tok" // added after signing
	old := signed("alice", "12345678", base, "x")
	old[uniqueKeyQuery] = "true" // not signed by clients up to V4_9_3
	for _, tc := range []struct {
		name    string
		code    int32
		version int32
		ext     map[string]string
		body    string
		want    string // "" accepted
	}{
		{"signed", 310, 513, signed("alice", "12345678", base, "x"), "x", ""},
		{"unsigned", 310, 513, base, "x", "username cannot be null."},
		{"no fields", 310, 513, nil, "", "username cannot be null."},
		{"empty access key", 310, 513, map[string]string{"AccessKey": ""}, "", "username cannot be null."},
		{"wrong secret", 310, 513, signed("alice", "nope", base, "x"), "x", "check signature failed."},
		{"body changed", 310, 513, signed("alice", "12345678", base, "x"), "y", "check signature failed."},
		{"no signature", 310, 513, map[string]string{"AccessKey": "alice"}, "", "check signature failed."},
		{"unknown user", 310, 513, signed("mallory", "x", base, ""), "", "User:mallory is not found."},
		{"disabled user", 310, 513, signed("bob", "secret-b", base, ""), "", "User:bob is disabled."},
		{"client-go security token", 310, 513, clientGo, "x", ""},
		{"unique key left out up to V4_9_3", 310, 399, old, "x", ""},
		{"unique key signed from V4_9_4", 310, 401, old, "x", "check signature failed."},
		{"whitelisted code", 105, 513, base, "", ""},
		{"whitelisted code, second item", 34, 513, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AuthenticateRemoting(tc.code, tc.version, tc.ext, []byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Fatalf("refused with %q, want %q", err, tc.want)
			}
			var ae *Error
			if err != nil && !errors.As(err, &ae) {
				t.Fatalf("error %T is not an auth error", err)
			}
		})
	}
}

func mustResource(t *testing.T, key string) Resource {
	t.Helper()
	r, ok := ParseResource(key)
	if !ok {
		t.Fatalf("resource %q does not parse", key)
	}
	return r
}

func TestParseResource(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Resource
		ok   bool
	}{
		{"*", Resource{Type: ResAny, Pattern: PatAny}, true},
		{"Topic:T1", Resource{Type: ResTopic, Name: "T1"}, true},
		{"topic:T1", Resource{Type: ResTopic, Name: "T1"}, true},
		{"Topic:*", Resource{Type: ResTopic, Pattern: PatAny}, true},
		{"Group:G*", Resource{Type: ResGroup, Name: "G", Pattern: PatPrefixed}, true},
		{"Group:a*b*", Resource{Type: ResGroup, Name: "a", Pattern: PatPrefixed}, true},
		{"Cluster:DefaultCluster", Resource{Type: ResCluster, Name: "DefaultCluster"}, true},
		{"Namespace:ns", Resource{Type: ResNamespace, Name: "ns"}, true},
		{"Queue:q", Resource{}, false},
		{" ", Resource{}, false},
	} {
		got, ok := ParseResource(tc.key)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseResource(%q) = %+v, %v; want %+v, %v", tc.key, got, ok, tc.want, tc.ok)
		}
		if ok && tc.key != " " && tc.key != "topic:T1" && tc.key != "Group:a*b*" && got.Key() != tc.key {
			t.Errorf("Key of %q = %q", tc.key, got.Key())
		}
	}
}

type entrySpec struct {
	policy   PolicyType
	resource string
	actions  []Action
	ips      []string
	decision Decision
}

func TestAuthorize(t *testing.T) {
	pub := []Action{ActPub}
	for _, tc := range []struct {
		name    string
		entries []entrySpec
		user    string
		res     Resource
		actions []Action
		ip      string
		want    string // "" allowed
	}{
		{"literal allow", []entrySpec{{"", "Topic:T1", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"no acl at all", nil, "alice", TopicResource("T1"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T1 from 127.0.0.1, no matched policies."},
		{"other topic", []entrySpec{{"", "Topic:T1", pub, nil, Allow}}, "alice", TopicResource("T2"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T2 from 127.0.0.1, no matched policies."},
		{"other action", []entrySpec{{"", "Topic:T1", pub, nil, Allow}}, "alice", TopicResource("T1"), []Action{ActSub}, "127.0.0.1",
			"User:alice has no permission to access Topic:T1 from 127.0.0.1, no matched policies."},
		{"one of several actions", []entrySpec{{"", "Topic:T1", []Action{ActGet}, nil, Allow}}, "alice", TopicResource("T1"), []Action{ActPub, ActSub, ActGet}, "127.0.0.1", ""},
		{"All grants every action", []entrySpec{{"", "Topic:T1", []Action{ActAll}, nil, Allow}}, "alice", TopicResource("T1"), []Action{ActDelete}, "127.0.0.1", ""},
		{"deny beats allow on the same resource", []entrySpec{{"", "Topic:T1", pub, nil, Allow}, {"", "Topic:T*", pub, nil, Allow}, {"", "Topic:T1", []Action{ActAll}, nil, Deny}, {"", "Topic:T1", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T1 from 127.0.0.1, the decision is deny."},
		{"literal allow beats prefix deny", []entrySpec{{"", "Topic:T*", pub, nil, Deny}, {"", "Topic:T1", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"prefix deny", []entrySpec{{"", "Topic:T*", pub, nil, Deny}, {"", "Topic:*", pub, nil, Allow}}, "alice", TopicResource("T9"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T9 from 127.0.0.1, the decision is deny."},
		{"longer prefix first", []entrySpec{{"", "Topic:T*", pub, nil, Deny}, {"", "Topic:T1*", pub, nil, Allow}}, "alice", TopicResource("T12"), pub, "127.0.0.1", ""},
		{"Any type last", []entrySpec{{"", "*", pub, nil, Deny}, {"", "Topic:*", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"Any type alone", []entrySpec{{"", "*", pub, nil, Allow}}, "alice", GroupResource("G"), pub, "127.0.0.1", ""},
		{"type must match", []entrySpec{{"", "Group:T1", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T1 from 127.0.0.1, no matched policies."},
		{"ip in CIDR", []entrySpec{{"", "Topic:T1", pub, []string{"10.0.0.0/8", "127.0.0.0/8"}, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"ip literal", []entrySpec{{"", "Topic:T1", pub, []string{"127.0.0.1"}, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"ip outside", []entrySpec{{"", "Topic:T1", pub, []string{"10.0.0.0/8"}, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T1 from 127.0.0.1, no matched policies."},
		{"default policy when no custom entry matches", []entrySpec{{PolicyCustom, "Topic:X", pub, nil, Allow}, {PolicyDefault, "Topic:*", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"custom entry hides the default policy", []entrySpec{{PolicyCustom, "Topic:*", pub, nil, Deny}, {PolicyDefault, "Topic:T1", pub, nil, Allow}}, "alice", TopicResource("T1"), pub, "127.0.0.1",
			"User:alice has no permission to access Topic:T1 from 127.0.0.1, the decision is deny."},
		{"super user bypasses", nil, "root", TopicResource("T1"), pub, "127.0.0.1", ""},
		{"unknown user", nil, "mallory", TopicResource("T1"), pub, "127.0.0.1", "User:mallory not found."},
		{"retry group", []entrySpec{{"", "Group:G1", []Action{ActSub}, nil, Allow}}, "alice", GroupResource("%RETRY%G1"), []Action{ActSub}, "127.0.0.1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testService(t, Config{AuthorizationEnabled: true})
			// One createAcl of every entry: a new ACL is stored as sent,
			// two entries of one resource included (as Apache stores it).
			a := &ACL{Subject: "User:alice"}
			for _, e := range tc.entries {
				pt := e.policy
				if pt == "" {
					pt = PolicyCustom
				}
				p := a.policy(pt)
				if p == nil {
					a.Policies = append(a.Policies, Policy{Type: pt})
					p = &a.Policies[len(a.Policies)-1]
				}
				p.Entries = append(p.Entries, Entry{Resource: mustResource(t, e.resource), Actions: e.actions, SourceIPs: e.ips, Decision: e.decision})
			}
			if len(a.Policies) > 0 {
				if err := s.PutACL(a); err != nil {
					t.Fatal(err)
				}
			}
			denied, err := s.Authorize(Request{Username: tc.user, HasUser: true, SourceIP: tc.ip, RPCCode: "10"}, []Check{{Resource: tc.res, Actions: tc.actions}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("denied: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("allowed, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Fatalf("denied with %q, want %q", err, tc.want)
			case tc.want != "" && denied != 0:
				t.Fatal("no denied check reported")
			}
		})
	}
}

func TestAuthorizeWithoutSubjectAndWhitelist(t *testing.T) {
	s := testService(t, Config{AuthorizationEnabled: true, AuthorizationWhitelist: "10"})
	checks := []Check{{Resource: TopicResource("T"), Actions: []Action{ActPub}}}
	if _, err := s.Authorize(Request{SourceIP: "127.0.0.1", RPCCode: "11"}, checks); err == nil || err.Error() != msgAuthzFailed {
		t.Fatalf("no subject: %v", err)
	}
	if _, err := s.Authorize(Request{SourceIP: "127.0.0.1", RPCCode: "10"}, checks); err != nil {
		t.Fatalf("whitelisted code: %v", err)
	}
	if _, err := s.Authorize(Request{Username: "alice", HasUser: true, RPCCode: "11"}, nil); err != nil {
		t.Fatalf("no checks: %v", err)
	}
}
