package protocol

// Bodies of the auth module's admin requests (AUTH_CREATE_USER …
// AUTH_LIST_ACL, docs/auth.md), as Apache's
// org/apache/rocketmq/remoting/protocol/body/UserInfo.java and AclInfo.java
// serialize them: fastjson writes the properties in name order and leaves
// nulls out, hence the field order and omitempty.

// UserInfo is one user: userType "Super" | "Normal", userStatus
// "enable" | "disable".
type UserInfo struct {
	Password   string `json:"password,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
	UserType   string `json:"userType,omitempty"`
	Username   string `json:"username,omitempty"`
}

// AclInfo is the ACL of one subject ("User:alice").
type AclInfo struct {
	Policies []PolicyInfo `json:"policies,omitempty"`
	Subject  string       `json:"subject,omitempty"`
}

// PolicyInfo is one policy of an ACL: policyType "Custom" | "Default".
type PolicyInfo struct {
	Entries    []PolicyEntryInfo `json:"entries,omitempty"`
	PolicyType string            `json:"policyType,omitempty"`
}

// PolicyEntryInfo grants or denies actions ("Pub", "Sub", "Create",
// "Update", "Delete", "Get", "List", "All") on one resource ("Topic:T",
// "Group:G*", "Cluster:C", "*") from source IPs or CIDRs (none: any);
// decision "Allow" | "Deny".
type PolicyEntryInfo struct {
	Actions   []string `json:"actions,omitempty"`
	Decision  string   `json:"decision,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	SourceIps []string `json:"sourceIps,omitempty"`
}
