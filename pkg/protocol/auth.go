package protocol

// Bodies and header fields of the ACL 2.0 administration requests
// AUTH_CREATE_USER … AUTH_LIST_ACL (3001–3010), as Apache's
// org/apache/rocketmq/remoting/protocol/body/UserInfo.java and AclInfo.java
// and the *UserRequestHeader / *AclRequestHeader classes.
//
// fastjson writes no key for a null field: strings are omitempty and lists
// omitzero, so a nil list is left out while an empty one is written as [].
// Fields are in alphabetical key order (fastjson's).

// Header fields of the auth requests.
const (
	// HdrUsername: AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER,
	// AUTH_GET_USER.
	HdrUsername = "username"
	// HdrFilter: AUTH_LIST_USER (optional; a substring of the username).
	HdrFilter = "filter"
	// HdrSubject: AUTH_CREATE_ACL, AUTH_UPDATE_ACL, AUTH_DELETE_ACL,
	// AUTH_GET_ACL ("User:alice").
	HdrSubject = "subject"
	// HdrPolicyType and HdrResource: AUTH_DELETE_ACL (both optional).
	HdrPolicyType = "policyType"
	HdrResource   = "resource"
	// HdrSubjectFilter and HdrResourceFilter: AUTH_LIST_ACL (optional).
	HdrSubjectFilter  = "subjectFilter"
	HdrResourceFilter = "resourceFilter"
)

// User types, statuses, decisions, policy types and actions by their
// Apache names (org/apache/rocketmq/auth/.../enums). The broker matches
// them case-insensitively.
const (
	UserTypeSuper     = "Super"
	UserTypeNormal    = "Normal"
	UserStatusEnable  = "enable"
	UserStatusDisable = "disable"

	DecisionAllow = "Allow"
	DecisionDeny  = "Deny"

	PolicyTypeCustom  = "Custom"
	PolicyTypeDefault = "Default"

	SubjectUserPrefix = "User:"
)

// UserInfo is the body of AUTH_CREATE_USER and AUTH_UPDATE_USER, the answer
// of AUTH_GET_USER, and (as a JSON array) of AUTH_LIST_USER. Empty fields
// are left out; on update they mean "unchanged".
type UserInfo struct {
	Password   string `json:"password,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
	UserType   string `json:"userType,omitempty"`
	Username   string `json:"username,omitempty"`
}

// AclInfo is the body of AUTH_CREATE_ACL and AUTH_UPDATE_ACL, the answer of
// AUTH_GET_ACL, and (as a JSON array) of AUTH_LIST_ACL: a subject's
// policies.
type AclInfo struct {
	Policies []PolicyInfo `json:"policies,omitzero"`
	Subject  string       `json:"subject,omitempty"`
}

// PolicyInfo is one policy of an AclInfo. PolicyType is "Custom" for
// policies made by the admin requests, "Default" for the one the broker
// keeps per subject; the tools send none (the broker takes Custom).
type PolicyInfo struct {
	Entries    []PolicyEntryInfo `json:"entries,omitzero"`
	PolicyType string            `json:"policyType,omitempty"`
}

// PolicyEntryInfo is one entry of a policy: a resource ("Topic:T",
// "Group:G", "Cluster", "Topic:*", "Topic:pre*"), its actions ("Pub",
// "Sub", "Create", "Update", "Delete", "Get", "List", "All"), the source IPs
// or CIDRs it applies to (none: from anywhere) and the decision ("Allow",
// "Deny").
type PolicyEntryInfo struct {
	Actions   []string `json:"actions,omitzero"`
	Decision  string   `json:"decision,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	SourceIps []string `json:"sourceIps,omitzero"`
}

// NewAclInfo is Apache's AclInfo.of: one policy (type unset) with one entry
// per resource, each with the same actions, source IPs and decision — what
// mqadmin createAcl and updateAcl send.
func NewAclInfo(subject string, resources, actions, sourceIps []string, decision string) AclInfo {
	entries := make([]PolicyEntryInfo, 0, len(resources))
	for _, r := range resources {
		entries = append(entries, PolicyEntryInfo{Actions: actions, Decision: decision, Resource: r, SourceIps: sourceIps})
	}
	return AclInfo{Subject: subject, Policies: []PolicyInfo{{Entries: entries}}}
}
