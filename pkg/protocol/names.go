package protocol

import (
	"fmt"
	"sort"
	"strings"
)

// Name limits and prefixes (docs/protocol.md §6.7).
const (
	TopicMaxLength      = 127
	RetryDLQTopicMaxLen = 255
	GroupMaxLength      = 120

	RetryGroupTopicPrefix = "%RETRY%"
	DLQGroupTopicPrefix   = "%DLQ%"
	LMQPrefix             = "%LMQ%"
	SysTopicPrefix        = "rmq_sys_"
	CIDSysPrefix          = "CID_RMQ_SYS_"

	AutoCreateTopicKey = "TBW102"
	ScheduleTopic      = "SCHEDULE_TOPIC_XXXX"
	BenchmarkTopic     = "BenchmarkTest"
	TransHalfTopic     = "RMQ_SYS_TRANS_HALF_TOPIC"
	TransOpHalfTopic   = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TransCheckMaxTopic = "TRANS_CHECK_MAX_TIME_TOPIC"
	TraceTopic         = "RMQ_SYS_TRACE_TOPIC"
	SelfTestTopic      = "SELF_TEST_TOPIC"
	OffsetMovedEvent   = "OFFSET_MOVED_EVENT"
	CheckpointTopic    = "CHECKPOINT_TOPIC"
)

// systemTopics are reserved: users may not create or delete them by admin.
var systemTopics = map[string]bool{
	AutoCreateTopicKey: true, ScheduleTopic: true, BenchmarkTopic: true, TransHalfTopic: true,
	TraceTopic: true, TransOpHalfTopic: true, TransCheckMaxTopic: true, SelfTestTopic: true,
	OffsetMovedEvent: true, CheckpointTopic: true,
}

// sendForbidden topics reject SEND with NO_PERMISSION.
var sendForbidden = map[string]bool{
	ScheduleTopic: true, TransHalfTopic: true, TransOpHalfTopic: true, TransCheckMaxTopic: true,
	SelfTestTopic: true, OffsetMovedEvent: true,
}

var reservedGroups = map[string]bool{
	"DEFAULT_PRODUCER": true, "DEFAULT_CONSUMER": true, "TOOLS_CONSUMER": true, "CLIENT_INNER_PRODUCER": true,
	"SCHEDULE_CONSUMER": true, "FILTERSRV_CONSUMER": true, "__MONITOR_CONSUMER": true, "SELF_TEST_P_GROUP": true,
	"SELF_TEST_C_GROUP": true, "_INNER_TRACE_PRODUCER": true,
}

// The maps above are read-only lookup tables, never written after init.

func validChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '%' || c == '|') {
			return false
		}
	}
	return true
}

// ValidateTopic checks a topic name's characters and length.
func ValidateTopic(topic string) error {
	max := TopicMaxLength
	if strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix) {
		max = RetryDLQTopicMaxLen
	}
	return validateName("topic", topic, max)
}

// validateName checks that name, a kind ("topic", "group"), is not blank,
// has only legal characters and is at most max bytes long, with Java's
// messages.
func validateName(kind, name string, max int) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("the specified %s is blank", kind)
	}
	if !validChars(name) {
		return fmt.Errorf("the specified %s %q contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", kind, name)
	}
	if len(name) > max {
		return fmt.Errorf("the specified %s is longer than %s max length %d", kind, kind, max)
	}
	return nil
}

// IsSystemTopic reports whether a topic is reserved by the system.
func IsSystemTopic(topic string) bool {
	return systemTopics[topic] || strings.HasPrefix(topic, SysTopicPrefix)
}

// SystemTopicNames lists the reserved topic names (TopicValidator's
// static SYSTEM_TOPIC_SET), sorted.
func SystemTopicNames() []string {
	out := make([]string, 0, len(systemTopics))
	for t := range systemTopics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// IsSendForbidden reports whether producers may not send to the topic.
func IsSendForbidden(topic string) bool { return sendForbidden[topic] }

// ValidateUserTopic is ValidateTopic plus the reserved-name rules that apply
// to topics created or deleted by users through admin requests.
func ValidateUserTopic(topic string) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	if IsSystemTopic(topic) {
		return fmt.Errorf("the topic %q is a system topic and is reserved", topic)
	}
	return nil
}

// ValidateGroup checks a consumer or producer group name.
func ValidateGroup(group string) error {
	return validateName("group", group, GroupMaxLength)
}

// IsReservedGroup reports whether a group name is reserved by the system.
func IsReservedGroup(group string) bool {
	return reservedGroups[group] || strings.HasPrefix(group, CIDSysPrefix)
}

// RetryTopic returns %RETRY%<group>.
func RetryTopic(group string) string { return RetryGroupTopicPrefix + group }

// DLQTopic returns %DLQ%<group>.
func DLQTopic(group string) string { return DLQGroupTopicPrefix + group }
