package protocol

import (
	"maps"
	"slices"
	"strings"
)

// Topic filter types.
const (
	SingleTag = "SINGLE_TAG"
	MultiTag  = "MULTI_TAG"
)

// Defaults of a TopicConfig whose fields are absent.
const (
	DefaultReadQueueNums  = 16
	DefaultWriteQueueNums = 16
)

// TopicConfig is a broker's configuration of one topic.
type TopicConfig struct {
	Attributes      map[string]string `json:"attributes"`
	Order           bool              `json:"order"`
	Perm            int               `json:"perm"`
	ReadQueueNums   int               `json:"readQueueNums"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicName       string            `json:"topicName"`
	TopicSysFlag    int               `json:"topicSysFlag"`
	WriteQueueNums  int               `json:"writeQueueNums"`
}

// NewTopicConfig returns a config with Apache's defaults.
func NewTopicConfig(name string) TopicConfig {
	return TopicConfig{
		Attributes:      map[string]string{},
		Perm:            PermRead | PermWrite,
		ReadQueueNums:   DefaultReadQueueNums,
		TopicFilterType: SingleTag,
		TopicName:       name,
		WriteQueueNums:  DefaultWriteQueueNums,
	}
}

// Attribute returns the value of an attribute, with or without the "+" prefix
// that admin updates carry.
func (t TopicConfig) Attribute(key string) (string, bool) {
	if v, ok := t.Attributes[key]; ok {
		return v, true
	}
	v, ok := t.Attributes["+"+key]
	return v, ok
}

// Equal compares two configs field by field.
func (t TopicConfig) Equal(o TopicConfig) bool {
	if t.Order != o.Order || t.Perm != o.Perm || t.ReadQueueNums != o.ReadQueueNums || t.TopicFilterType != o.TopicFilterType ||
		t.TopicName != o.TopicName || t.TopicSysFlag != o.TopicSysFlag || t.WriteQueueNums != o.WriteQueueNums || len(t.Attributes) != len(o.Attributes) {
		return false
	}
	for k, v := range t.Attributes {
		if ov, ok := o.Attributes[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// ParseAttributes parses the admin attribute syntax "+k=v,+k2=v2,-k3" into
// additions and deletions.
func ParseAttributes(s string) (add map[string]string, del []string, ok bool) {
	add = map[string]string{}
	s = strings.TrimSpace(s)
	if s == "" {
		return add, nil, true
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if len(item) < 2 {
			return nil, nil, false
		}
		switch item[0] {
		case '+':
			kv := strings.SplitN(item[1:], "=", 2)
			if len(kv) != 2 || kv[0] == "" {
				return nil, nil, false
			}
			add[kv[0]] = kv[1]
		case '-':
			if strings.Contains(item, "=") {
				return nil, nil, false
			}
			del = append(del, item[1:])
		default:
			return nil, nil, false
		}
	}
	return add, del, true
}

// FormatAttributes renders attributes in the admin syntax, sorted.
func FormatAttributes(attrs map[string]string) string {
	keys := slices.Sorted(maps.Keys(attrs))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if !strings.HasPrefix(k, "+") {
			b.WriteByte('+')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(attrs[k])
	}
	return b.String()
}

// TopicConfigSerializeWrapper is the GET_ALL_TOPIC_CONFIG body and the topic
// part of a registration.
type TopicConfigSerializeWrapper struct {
	DataVersion      DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
}

// TopicConfigAndMappingSerializeWrapper is what a broker registers: topic
// configs plus static-topic mappings.
type TopicConfigAndMappingSerializeWrapper struct {
	DataVersion                DataVersion                        `json:"dataVersion"`
	MappingDataVersion         DataVersion                        `json:"mappingDataVersion"`
	TopicConfigTable           map[string]TopicConfig             `json:"topicConfigTable"`
	TopicQueueMappingDetailMap map[string]TopicQueueMappingDetail `json:"topicQueueMappingDetailMap"`
	TopicQueueMappingInfoMap   map[string]TopicQueueMappingInfo   `json:"topicQueueMappingInfoMap"`
}

// RegisterBrokerBody is the REGISTER_BROKER body (uncompressed form).
type RegisterBrokerBody struct {
	FilterServerList            []string                              `json:"filterServerList"`
	TopicConfigSerializeWrapper TopicConfigAndMappingSerializeWrapper `json:"topicConfigSerializeWrapper"`
}

// TopicConfigAndQueueMapping is the GET_TOPIC_CONFIG (351) body: a TopicConfig
// plus the static-topic mapping detail when the topic has one.
type TopicConfigAndQueueMapping struct {
	Attributes      map[string]string        `json:"attributes"`
	MappingDetail   *TopicQueueMappingDetail `json:"mappingDetail,omitempty"`
	Order           bool                     `json:"order"`
	Perm            int                      `json:"perm"`
	ReadQueueNums   int                      `json:"readQueueNums"`
	TopicFilterType string                   `json:"topicFilterType"`
	TopicName       string                   `json:"topicName"`
	TopicSysFlag    int                      `json:"topicSysFlag"`
	WriteQueueNums  int                      `json:"writeQueueNums"`
}
