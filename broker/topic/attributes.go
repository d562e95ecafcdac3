package topic

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Topic attribute names (Java TopicAttributes, plus the 5.5 lite ones).
const (
	AttrQueueType           = "queue.type"
	AttrCleanupPolicy       = "cleanup.policy"
	AttrMessageType         = "message.type"
	AttrReserveTime         = "reserve.time"
	AttrLiteTopicExpiration = "lite.topic.expiration"
)

// Message types (values of message.type).
const (
	MessageTypeUnspecified = "UNSPECIFIED"
	MessageTypeNormal      = "NORMAL"
	MessageTypeFIFO        = "FIFO"
	MessageTypeDelay       = "DELAY"
	MessageTypeTransaction = "TRANSACTION"
	MessageTypeMixed       = "MIXED"
	MessageTypePriority    = "PRIORITY"
	MessageTypeLite        = "LITE"
)

// attrDef describes one supported attribute: whether it may change after the
// topic exists and which values it accepts.
type attrDef struct {
	changeable bool
	enum       []string // non-nil: allowed values
	min, max   int64    // long range when enum is nil
}

// lookupAttr is a switch rather than a package map so the table cannot be
// mutated at run time.
func lookupAttr(name string) (attrDef, bool) {
	switch name {
	case AttrQueueType:
		return attrDef{enum: []string{"BatchCQ", "SimpleCQ"}}, true
	case AttrCleanupPolicy:
		return attrDef{enum: []string{"DELETE", "COMPACTION"}}, true
	case AttrMessageType:
		return attrDef{changeable: true, enum: []string{MessageTypeUnspecified, MessageTypeNormal, MessageTypeFIFO,
			MessageTypeDelay, MessageTypeTransaction, MessageTypeMixed, MessageTypePriority, MessageTypeLite}}, true
	case AttrReserveTime:
		return attrDef{changeable: true, min: -1, max: 1<<63 - 1}, true
	case AttrLiteTopicExpiration:
		return attrDef{changeable: true, min: -1, max: 43200}, true
	}
	return attrDef{}, false
}

func (d attrDef) verify(value string) error {
	if d.enum != nil {
		if !slices.Contains(d.enum, value) {
			return fmt.Errorf("value is not in set: %v", d.enum)
		}
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return fmt.Errorf("value %q is not a number", value)
	}
	if n < d.min || n > d.max {
		return fmt.Errorf("value is not in range(%d, %d)", d.min, d.max)
	}
	return nil
}

// ParseAttributeMods parses the UPDATE_AND_CREATE_TOPIC header syntax
// "+k1=v1,+k2=v2,-k3" into a modification map {"+k1":"v1","-k3":""}, the
// form TopicConfig.attributes takes in admin requests.
func ParseAttributeMods(s string) (map[string]string, error) {
	mods := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return mods, nil
	}
	for _, kv := range strings.Split(s, ",") {
		var key, value string
		if k, v, ok := strings.Cut(kv, "="); ok {
			key, value = k, v
			if !strings.HasPrefix(key, "+") {
				return nil, fmt.Errorf("add/alter attribute format is wrong: %q (want +key=value)", key)
			}
		} else {
			key = kv
			if !strings.HasPrefix(key, "-") {
				return nil, fmt.Errorf("delete attribute format is wrong: %q (want -key)", key)
			}
		}
		if _, dup := mods[key]; dup {
			return nil, fmt.Errorf("key duplication: %s", key)
		}
		mods[key] = value
	}
	return mods, nil
}

// AlterAttributes applies admin modifications ("+k": v adds or updates,
// "-k" deletes) to a topic's current attributes, with Java's
// AttributeUtil.alterCurrentAttributes rules: only additions when creating,
// no deleting of absent keys, only supported keys, unchangeable keys fixed
// after creation, values verified. Stored keys carry no prefix.
func AlterAttributes(create bool, current, mods map[string]string) (map[string]string, error) {
	final := maps.Clone(current)
	if final == nil {
		final = map[string]string{}
	}
	seen := map[string]bool{}
	keys := slices.Sorted(maps.Keys(mods))
	for _, key := range keys {
		value := mods[key]
		if len(key) < 2 {
			return nil, fmt.Errorf("kv string format wrong: %q", key)
		}
		op, real := key[0], key[1:]
		if strings.ContainsAny(real, "+-") {
			return nil, fmt.Errorf("kv string format wrong: %q", key)
		}
		if seen[real] {
			return nil, fmt.Errorf("alter duplication key. key: %s", real)
		}
		seen[real] = true
		def, ok := lookupAttr(real)
		if create && op != '+' {
			return nil, fmt.Errorf("only add attribute is supported while creating topic. key: %s", real)
		}
		switch op {
		case '+':
		case '-':
			if _, exists := current[real]; !exists {
				return nil, fmt.Errorf("attempt to delete a nonexistent key: %s", real)
			}
		default:
			return nil, fmt.Errorf("wrong format key: %s", real)
		}
		if !ok {
			return nil, fmt.Errorf("unsupported key: %s", real)
		}
		if !create && !def.changeable {
			return nil, fmt.Errorf("attempt to update an unchangeable attribute. key: %s", real)
		}
		if op == '-' {
			delete(final, real)
			continue
		}
		if err := def.verify(value); err != nil {
			return nil, fmt.Errorf("attribute %s: %w", real, err)
		}
		if real == AttrReserveTime {
			// Java accepts reserve.time only with the tiered store.
			return nil, fmt.Errorf("update topic reserveTime not supported")
		}
		final[real] = value
	}
	return final, nil
}

// normaliseStored strips a leading "+" from attribute keys, for topics.json
// files or registrations that carry request-style keys.
func normaliseStored(attrs map[string]string) map[string]string {
	out := make(map[string]string, len(attrs))
	for k, v := range attrs {
		out[strings.TrimPrefix(k, "+")] = v
	}
	return out
}
