package protocol

// Header fields, names and the tools' ACL body of the auth module's admin
// requests AUTH_CREATE_USER … AUTH_LIST_ACL (3001–3010; docs/protocol.md
// §3.7), as Apache's *UserRequestHeader / *AclRequestHeader /
// ListUsersRequestHeader / ListAclsRequestHeader and the enums of
// org/apache/rocketmq/auth name them. The bodies are in auth.go.

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

// User types, statuses, decisions and policy types by their Apache names.
// The broker matches them case-insensitively and answers these spellings.
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

// NewAclInfo is Apache's AclInfo.of: one policy (type unset: the broker
// takes Custom) with one entry per resource, each with the same actions,
// source IPs and decision — what mqadmin createAcl and updateAcl send.
func NewAclInfo(subject string, resources, actions, sourceIps []string, decision string) AclInfo {
	entries := make([]PolicyEntryInfo, 0, len(resources))
	for _, r := range resources {
		entries = append(entries, PolicyEntryInfo{Actions: actions, Decision: decision, Resource: r, SourceIps: sourceIps})
	}
	return AclInfo{Subject: subject, Policies: []PolicyInfo{{Entries: entries}}}
}
