// Package auth is the broker's authentication and authorization ("ACL 2.0",
// Apache RocketMQ 5.3+'s auth module, docs/auth.md): users and their
// passwords, ACLs of subject × resource × actions × source IPs × decision,
// the request signature check, the request code → resource map, the admin
// requests AUTH_CREATE_USER … AUTH_LIST_ACL and the store that keeps users
// and ACLs across restarts.
package auth

import (
	"net/netip"
	"strings"
)

// UserType is Apache's UserType (auth/authentication/enums/UserType.java).
type UserType string

// User types; a Super user passes every authorization check.
const (
	UserSuper  UserType = "Super"
	UserNormal UserType = "Normal"
)

// UserStatus is Apache's UserStatus: a disabled user cannot authenticate.
type UserStatus string

// User statuses.
const (
	StatusEnable  UserStatus = "enable"
	StatusDisable UserStatus = "disable"
)

// ParseUserType reads a type name case-insensitively; "" for unknown.
func ParseUserType(s string) UserType { return parseNamed(s, UserSuper, UserNormal) }

// ParseUserStatus reads a status name case-insensitively; "" for unknown.
func ParseUserStatus(s string) UserStatus { return parseNamed(s, StatusEnable, StatusDisable) }

// parseNamed is the one of names that s names case-insensitively; "" if
// none.
func parseNamed[T ~string](s string, names ...T) T {
	for _, n := range names {
		if strings.EqualFold(s, string(n)) {
			return n
		}
	}
	return ""
}

// User is one account: the username is the AccessKey clients sign with, the
// password the SecretKey.
type User struct {
	Username string
	Password string
	Type     UserType
	Status   UserStatus
}

// ResourceType is Apache's common/resource/ResourceType.
type ResourceType uint8

// Resource types; ResAny is the resource "*".
const (
	ResUnknown ResourceType = iota
	ResAny
	ResCluster
	ResNamespace
	ResTopic
	ResGroup
)

var resourceTypeNames = [...]string{"Unknown", "Any", "Cluster", "Namespace", "Topic", "Group"}

func (t ResourceType) String() string { return enumName(resourceTypeNames[:], t) }

func parseResourceType(s string) ResourceType {
	return parseEnum[ResourceType](resourceTypeNames[:], s)
}

// enumName is the name of v in names, whose first entry is the unknown
// value's name; a value past the end is unknown.
func enumName[T ~uint8](names []string, v T) string {
	if int(v) < len(names) {
		return names[v]
	}
	return names[0]
}

// parseEnum finds s in names case-insensitively; the zero value (unknown,
// names[0], never matched) when it is not there.
func parseEnum[T ~uint8](names []string, s string) T {
	for i, n := range names {
		if i > 0 && strings.EqualFold(n, s) {
			return T(i)
		}
	}
	return 0
}

// Pattern is Apache's ResourcePattern.
type Pattern uint8

// Resource patterns: "Topic:*" is PatAny, "Topic:T*" PatPrefixed.
const (
	PatLiteral Pattern = iota
	PatAny
	PatPrefixed
)

// Resource is what a policy entry or a request names.
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern Pattern
}

// Retry and DLQ prefixes (docs/protocol.md): a retry topic is authorized
// as its group, as Apache's NamespaceUtil.isRetryTopic / withOutRetryAndDLQ.
const (
	retryPrefix = "%RETRY%"
	dlqPrefix   = "%DLQ%"
)

func isRetryTopic(s string) bool { return strings.HasPrefix(s, retryPrefix) }

// TopicResource is the literal resource of a topic.
func TopicResource(name string) Resource { return Resource{Type: ResTopic, Name: name} }

// GroupResource is the literal resource of a group; a retry or DLQ topic
// name is reduced to its group, as Apache's Resource.ofGroup.
func GroupResource(name string) Resource {
	if isRetryTopic(name) {
		name = strings.TrimPrefix(name, retryPrefix)
	} else if strings.HasPrefix(name, dlqPrefix) {
		name = strings.TrimPrefix(name, dlqPrefix)
	}
	return Resource{Type: ResGroup, Name: name}
}

// ClusterResource is the literal resource of a cluster.
func ClusterResource(name string) Resource { return Resource{Type: ResCluster, Name: name} }

// ParseResource reads a resource key as Apache's Resource.of(String): "*",
// "Type:name", "Type:*", "Type:prefix*". ok is false for a blank key or an
// unknown type.
func ParseResource(key string) (Resource, bool) {
	if strings.TrimSpace(key) == "" {
		return Resource{}, false
	}
	if key == "*" {
		return Resource{Type: ResAny, Pattern: PatAny}, true
	}
	typ, name, _ := strings.Cut(key, ":")
	t := parseResourceType(typ)
	if t == ResUnknown {
		return Resource{}, false
	}
	r := Resource{Type: t, Name: name}
	switch {
	case name == "*":
		r.Name, r.Pattern = "", PatAny
	case strings.HasSuffix(name, "*"):
		r.Name, r.Pattern = name[:strings.IndexByte(name, '*')], PatPrefixed
	}
	return r, true
}

// Key is the resource's text form ("Topic:T", "Group:G*", "*").
func (r Resource) Key() string {
	if r.Type == ResAny {
		return "*"
	}
	switch r.Pattern {
	case PatAny:
		return r.Type.String() + ":*"
	case PatPrefixed:
		return r.Type.String() + ":" + r.Name + "*"
	}
	return r.Type.String() + ":" + r.Name
}

// Match reports whether this (policy) resource covers the requested one.
func (r Resource) Match(req Resource) bool {
	if r.Type == ResAny {
		return true
	}
	if r.Type != req.Type {
		return false
	}
	switch r.Pattern {
	case PatAny:
		return true
	case PatPrefixed:
		return strings.HasPrefix(req.Name, r.Name)
	}
	return req.Name == r.Name
}

// Action is Apache's common/action/Action.
type Action uint8

// Actions. ActAny is only requested (a request any entry action matches),
// never granted; ActAll is granted and covers every action.
const (
	ActUnknown Action = iota
	ActAll
	ActAny
	ActPub
	ActSub
	ActCreate
	ActUpdate
	ActDelete
	ActGet
	ActList
)

var actionNames = [...]string{"Unknown", "All", "Any", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List"}

func (a Action) String() string { return enumName(actionNames[:], a) }

// ParseAction reads an action name case-insensitively; ActUnknown if none.
func ParseAction(s string) Action { return parseEnum[Action](actionNames[:], s) }

// Decision is Apache's Decision.
type Decision uint8

// Decisions.
const (
	DecisionUnknown Decision = iota
	Allow
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return ""
}

// ParseDecision reads a decision case-insensitively.
func ParseDecision(s string) Decision {
	switch {
	case strings.EqualFold(s, "Allow"):
		return Allow
	case strings.EqualFold(s, "Deny"):
		return Deny
	}
	return DecisionUnknown
}

// PolicyType is Apache's PolicyType: Default entries are consulted only
// when no Custom entry matches.
type PolicyType string

// Policy types.
const (
	PolicyCustom  PolicyType = "Custom"
	PolicyDefault PolicyType = "Default"
)

// ParsePolicyType reads a policy type case-insensitively; "" for unknown.
func ParsePolicyType(s string) PolicyType { return parseNamed(s, PolicyCustom, PolicyDefault) }

// Entry is one policy entry.
type Entry struct {
	Resource  Resource
	Actions   []Action
	SourceIPs []string // IPs or CIDRs; none matches every source
	Decision  Decision
}

// matchActions is PolicyEntry.isMatchAction.
func (e *Entry) matchActions(req []Action) bool {
	if len(e.Actions) == 0 {
		return false
	}
	for _, a := range req {
		if a == ActAny {
			return true
		}
	}
	for _, a := range req {
		for _, g := range e.Actions {
			if g == a || g == ActAll {
				return true
			}
		}
	}
	return false
}

// matchIP is PolicyEntry.isMatchEnvironment: no source IPs matches all; an
// entry is a literal IP (compared as text) or a CIDR.
func (e *Entry) matchIP(ip string) bool {
	if len(e.SourceIPs) == 0 {
		return true
	}
	if ip == "" {
		return false
	}
	var addr netip.Addr
	var parsed bool
	for _, s := range e.SourceIPs {
		if !strings.Contains(s, "/") {
			if s == ip {
				return true
			}
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		if !parsed {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return false
			}
			addr, parsed = a.Unmap(), true
		}
		if p.Masked().Contains(addr) {
			return true
		}
	}
	return false
}

// validSourceIP is IPAddressUtils.isValidIPOrCidr.
func validSourceIP(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParsePrefix(s)
	return err == nil
}

// Policy is a list of entries of one type.
type Policy struct {
	Type    PolicyType
	Entries []Entry
}

// ACL is the policies of one subject ("User:alice").
type ACL struct {
	Subject  string
	Policies []Policy
}

func (a *ACL) policy(t PolicyType) *Policy {
	for i := range a.Policies {
		if a.Policies[i].Type == t {
			return &a.Policies[i]
		}
	}
	return nil
}

// merge is Acl.updatePolicy: each new policy's entries replace the entries
// of the same resource or are appended.
func (a *ACL) merge(policies []Policy) {
	for _, np := range policies {
		old := a.policy(np.Type)
		if old == nil {
			a.Policies = append(a.Policies, clonePolicy(np))
			continue
		}
		for _, ne := range np.Entries {
			replaced := false
			for i := range old.Entries {
				if old.Entries[i].Resource == ne.Resource {
					old.Entries[i] = cloneEntry(ne)
					replaced = true
					break
				}
			}
			if !replaced {
				old.Entries = append(old.Entries, cloneEntry(ne))
			}
		}
	}
}

// deleteEntry is Acl.deletePolicy: drop the entry of resource from the
// policy of type t, and the policy when it has no entries left.
func (a *ACL) deleteEntry(t PolicyType, r Resource) {
	for i := range a.Policies {
		p := &a.Policies[i]
		if p.Type != t {
			continue
		}
		for j := range p.Entries {
			if p.Entries[j].Resource == r {
				p.Entries = append(p.Entries[:j:j], p.Entries[j+1:]...)
				break
			}
		}
		if len(p.Entries) == 0 {
			a.Policies = append(a.Policies[:i:i], a.Policies[i+1:]...)
		}
		return
	}
}

func cloneEntry(e Entry) Entry {
	e.Actions = append([]Action(nil), e.Actions...)
	e.SourceIPs = append([]string(nil), e.SourceIPs...)
	return e
}

func clonePolicy(p Policy) Policy {
	out := Policy{Type: p.Type, Entries: make([]Entry, len(p.Entries))}
	for i, e := range p.Entries {
		out.Entries[i] = cloneEntry(e)
	}
	return out
}

func cloneACL(a *ACL) *ACL {
	out := &ACL{Subject: a.Subject, Policies: make([]Policy, len(a.Policies))}
	for i, p := range a.Policies {
		out.Policies[i] = clonePolicy(p)
	}
	return out
}

// SubjectKey is the subject of a user's ACL, "User:name".
func SubjectKey(username string) string { return "User:" + username }

// parseSubject is Subject.of: "User:name" → name; ok false for another
// subject type.
func parseSubject(key string) (string, bool) {
	typ, name, _ := strings.Cut(key, ":")
	if !strings.EqualFold(typ, "User") {
		return "", false
	}
	return name, true
}
