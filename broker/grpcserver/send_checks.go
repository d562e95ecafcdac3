package grpcserver

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// The proxy's limits on what a 5.x producer sends (Apache
// proxy/src/main/java/org/apache/rocketmq/proxy/config/ProxyConfig.java
// defaults; proxy/.../grpc/v2/producer/BuildMessagePropertyUtil.java).
const (
	maxUserPropertySize          = 16 * 1024 // bytes of user property keys and values, tag and keys
	userPropertyMaxNum           = 128
	maxMessageGroupSize          = 64 // bytes; a group must be shorter
	maxTransactionRecoverySecond = 3600
)

// checkMessage runs the proxy's checks of a message before it is built,
// with its status codes; nil when the message passes. maxBody is
// maxMessageSize (the proxy's own maxMessageSize).
func checkMessage(msg *v2pb.Message, maxBody int) *v2pb.Status {
	bad := func(c v2pb.Code, format string, args ...any) *v2pb.Status {
		return &v2pb.Status{Code: c, Message: fmt.Sprintf(format, args...)}
	}
	body := msg.GetBody()
	switch {
	case len(body) == 0:
		return bad(v2pb.Code_MESSAGE_BODY_EMPTY, "message body cannot be empty")
	case maxBody > 0 && len(body) > maxBody:
		return bad(v2pb.Code_MESSAGE_BODY_TOO_LARGE, "message body cannot exceed the max %d", maxBody)
	}
	user := msg.GetUserProperties()
	if len(user) > userPropertyMaxNum {
		return bad(v2pb.Code_MESSAGE_PROPERTIES_TOO_LARGE, "too many user properties, max is %d", userPropertyMaxNum)
	}
	size := 0
	for k, v := range user {
		switch {
		case systemProperty(k):
			return bad(v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "property is used by system: %s", k)
		case hasControl(k):
			return bad(v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character")
		case hasControl(v):
			return bad(v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the value of property cannot contain control character")
		}
		size += len(k) + len(v)
	}
	sp := msg.GetSystemProperties()
	tag := sp.GetTag()
	switch {
	case tag == "":
	case strings.TrimSpace(tag) == "":
		return bad(v2pb.Code_ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
	case strings.Contains(tag, "|"):
		return bad(v2pb.Code_ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
	case hasControl(tag):
		return bad(v2pb.Code_ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
	}
	size += len(tag)
	for _, k := range sp.GetKeys() {
		switch {
		case k == "":
		case strings.TrimSpace(k) == "":
			return bad(v2pb.Code_ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
		case hasControl(k):
			return bad(v2pb.Code_ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
		}
		size += len(k)
	}
	if size > maxUserPropertySize {
		return bad(v2pb.Code_MESSAGE_PROPERTIES_TOO_LARGE, "the total size of user property is too large, max is %d", maxUserPropertySize)
	}
	if g := sp.GetMessageGroup(); g != "" {
		switch {
		case strings.TrimSpace(g) == "":
			return bad(v2pb.Code_ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
		case len(g) >= maxMessageGroupSize:
			return bad(v2pb.Code_ILLEGAL_MESSAGE_GROUP, "message group exceed the max size %d", maxMessageGroupSize)
		case hasControl(g):
			return bad(v2pb.Code_ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")
		}
	}
	if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil && sp.GetMessageType() == v2pb.MessageType_TRANSACTION {
		if err := d.CheckValid(); err != nil || d.GetSeconds() < 0 {
			return bad(v2pb.Code_BAD_REQUEST, "orphaned transaction recovery duration %v is invalid", d)
		}
		if d.GetSeconds() > maxTransactionRecoverySecond {
			return bad(v2pb.Code_BAD_REQUEST, "the max transaction recovery time of message is too large, max is %d", maxTransactionRecoverySecond)
		}
	}
	return nil
}

// hasControl is Guava's CharMatcher.javaIsoControl over a string: U+0000–
// U+001F and U+007F–U+009F.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}
