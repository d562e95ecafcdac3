package processor

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// versionV500 is MQVersion.Version.V5_0_0's ordinal: compressed bodies from
// brokers at or above it carry static-topic mappings.
const versionV500 = 413

// maxInflated bounds a compressed registration's inflated size so a small
// hostile body cannot exhaust memory (a 1M-topic broker stays well below).
const maxInflated = 512 << 20

// registerBody is a decoded REGISTER_BROKER body.
type registerBody struct {
	dataVersion   protocol.DataVersion
	topics        map[string]protocol.TopicConfig
	mappings      map[string]protocol.TopicQueueMappingInfo
	filterServers []string
}

// wireTopicConfig decodes only what the nameserver uses. Absent fields are
// 0, where Java would take its constructor defaults (16/16 queues, perm RW):
// real brokers always send every field, and seeding defaults needs a custom
// UnmarshalJSON per topic that doubles the decoding time of large bodies.
type wireTopicConfig struct {
	Perm           int    `json:"perm"`
	ReadQueueNums  int    `json:"readQueueNums"`
	TopicName      string `json:"topicName"`
	TopicSysFlag   int    `json:"topicSysFlag"`
	WriteQueueNums int    `json:"writeQueueNums"`
}

func (w wireTopicConfig) config(name string) protocol.TopicConfig {
	if w.TopicName != "" {
		name = w.TopicName
	}
	return protocol.TopicConfig{TopicName: name, Perm: w.Perm, ReadQueueNums: w.ReadQueueNums,
		WriteQueueNums: w.WriteQueueNums, TopicSysFlag: w.TopicSysFlag, TopicFilterType: protocol.SingleTag}
}

type wireRegisterBody struct {
	FilterServerList            []string `json:"filterServerList"`
	TopicConfigSerializeWrapper struct {
		DataVersion              protocol.DataVersion                      `json:"dataVersion"`
		TopicConfigTable         map[string]wireTopicConfig                `json:"topicConfigTable"`
		TopicQueueMappingInfoMap map[string]protocol.TopicQueueMappingInfo `json:"topicQueueMappingInfoMap"`
	} `json:"topicConfigSerializeWrapper"`
}

// decodeRegisterBody decodes the JSON body or, with compressed, Apache's
// deflated binary layout (docs/protocol.md §4.4). An empty body is a broker
// without topics (Java: data version all zero).
func decodeRegisterBody(body []byte, compressed bool, version int32) (registerBody, error) {
	if len(body) == 0 {
		return registerBody{topics: map[string]protocol.TopicConfig{}}, nil
	}
	if compressed {
		return decodeCompressedBody(body, version >= versionV500)
	}
	var w wireRegisterBody
	if err := protocol.Unmarshal(body, &w); err != nil {
		return registerBody{}, err
	}
	wrap := &w.TopicConfigSerializeWrapper
	out := registerBody{
		dataVersion:   wrap.DataVersion,
		topics:        make(map[string]protocol.TopicConfig, len(wrap.TopicConfigTable)),
		mappings:      wrap.TopicQueueMappingInfoMap,
		filterServers: w.FilterServerList,
	}
	for name, tc := range wrap.TopicConfigTable {
		c := tc.config(name)
		out.topics[c.TopicName] = c
	}
	return out, nil
}

type inflater struct {
	r *bufio.Reader
}

func (in inflater) int32() (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(in.r, b[:]); err != nil {
		return 0, err
	}
	n := int(int32(binary.BigEndian.Uint32(b[:])))
	if n < 0 {
		return 0, fmt.Errorf("negative length %d", n)
	}
	return n, nil
}

func (in inflater) chunk() ([]byte, error) {
	n, err := in.int32()
	if err != nil {
		return nil, err
	}
	if n > maxInflated {
		return nil, fmt.Errorf("length %d too large", n)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(in.r, b)
	return b, err
}

// decodeCompressedBody reads: int32 len + DataVersion JSON; int32 topic
// count, then per topic int32 len + TopicConfig text
// ("name readQ writeQ perm filterType [attributesJSON]"); int32 len +
// filter-server JSON array; and from 5.0 brokers int32 count + (int32 len +
// TopicQueueMappingInfo JSON) per static topic.
func decodeCompressedBody(body []byte, withMappings bool) (registerBody, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return registerBody{}, fmt.Errorf("compressed body: %w", err)
	}
	defer zr.Close()
	in := inflater{bufio.NewReader(io.LimitReader(zr, maxInflated))}
	fail := func(what string, err error) (registerBody, error) {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return registerBody{}, fmt.Errorf("compressed body: %s: %w", what, err)
	}
	var out registerBody
	b, err := in.chunk()
	if err != nil {
		return fail("data version", err)
	}
	if err := protocol.Unmarshal(b, &out.dataVersion); err != nil {
		return fail("data version", err)
	}
	var what string
	out.topics, what, err = entries(in, "topic", 1<<16, func(b []byte) (string, protocol.TopicConfig, error) {
		tc, err := parseTopicConfigText(string(b))
		return tc.TopicName, tc, err
	})
	if err != nil {
		return fail(what, err)
	}
	if b, err = in.chunk(); err != nil {
		return fail("filter servers", err)
	}
	if err := protocol.Unmarshal(b, &out.filterServers); err != nil {
		return fail("filter servers", err)
	}
	if !withMappings {
		return out, nil
	}
	out.mappings, what, err = entries(in, "mapping", 1<<10, func(b []byte) (string, protocol.TopicQueueMappingInfo, error) {
		var info protocol.TopicQueueMappingInfo
		err := protocol.Unmarshal(b, &info)
		return info.Topic, info, err
	})
	if err != nil {
		return fail(what, err)
	}
	return out, nil
}

// entries reads an int32 count, then as many chunks, each an entry parse
// turns into its key and value; at most capHint entries are allocated up
// front. On an error it also returns what failed: "<kind> count" or
// "<kind> <i>".
func entries[V any](in inflater, kind string, capHint int, parse func([]byte) (string, V, error)) (map[string]V, string, error) {
	n, err := in.int32()
	if err != nil {
		return nil, kind + " count", err
	}
	out := make(map[string]V, min(n, capHint))
	for i := range n {
		b, err := in.chunk()
		if err != nil {
			return nil, fmt.Sprintf("%s %d", kind, i), err
		}
		k, v, err := parse(b)
		if err != nil {
			return nil, fmt.Sprintf("%s %d", kind, i), err
		}
		out[k] = v
	}
	return out, "", nil
}

// parseTopicConfigText parses Java's TopicConfig.encode() text. Like Java it
// ignores an attributes part that does not parse (attributes may contain
// spaces, which the format cannot carry); the nameserver does not use them.
func parseTopicConfigText(s string) (protocol.TopicConfig, error) {
	parts := strings.Split(s, " ")
	if len(parts) < 5 {
		return protocol.TopicConfig{}, fmt.Errorf("topic config %q: want at least 5 space-separated fields", s)
	}
	tc := protocol.TopicConfig{TopicName: parts[0], TopicFilterType: parts[4]}
	for i, dst := range []*int{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm} {
		v, err := strconv.Atoi(parts[i+1])
		if err != nil {
			return protocol.TopicConfig{}, fmt.Errorf("topic config %q: field %d: %w", s, i+1, err)
		}
		*dst = v
	}
	if tc.TopicFilterType != protocol.SingleTag && tc.TopicFilterType != protocol.MultiTag {
		return protocol.TopicConfig{}, fmt.Errorf("topic config %q: unknown filter type %q", s, tc.TopicFilterType)
	}
	if tc.TopicName == "" {
		return protocol.TopicConfig{}, fmt.Errorf("topic config %q: empty topic name", s)
	}
	return tc, nil
}
