package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
)

// EncodeRegisterBodyCompressed is the REGISTER_BROKER body a broker sends
// with compressedRegister=true (header `compressed=true`; Apache's
// RegisterBrokerBody.encode(true), docs/protocol.md §4.4): zlib-deflated,
// int32 length + DataVersion JSON; int32 topic count, then per topic int32
// length + TopicConfig text ("name readQ writeQ perm filterType " + the
// attributes' JSON); int32 length + filter-server JSON array; int32 count +
// (int32 length + TopicQueueMappingInfo JSON) per static topic (brokers from
// 5.0 on). Topics and mappings are written in name order.
func EncodeRegisterBodyCompressed(b RegisterBrokerBody) ([]byte, error) {
	var out bytes.Buffer
	zw := zlib.NewWriter(&out)
	var lenBuf [4]byte
	chunk := func(p []byte) {
		binary.BigEndian.PutUint32(lenBuf[:], uint32(len(p)))
		_, _ = zw.Write(lenBuf[:]) // writes to a bytes.Buffer do not fail
		_, _ = zw.Write(p)
	}
	count := func(n int) {
		binary.BigEndian.PutUint32(lenBuf[:], uint32(n))
		_, _ = zw.Write(lenBuf[:])
	}
	w := &b.TopicConfigSerializeWrapper
	dv, err := Marshal(w.DataVersion)
	if err != nil {
		return nil, fmt.Errorf("register body: data version: %w", err)
	}
	chunk(dv)
	count(len(w.TopicConfigTable))
	var line []byte
	for _, name := range slices.Sorted(mapKeys(w.TopicConfigTable)) {
		if line, err = appendTopicConfigText(line[:0], name, w.TopicConfigTable[name]); err != nil {
			return nil, err
		}
		chunk(line)
	}
	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	fs, err := Marshal(filters)
	if err != nil {
		return nil, fmt.Errorf("register body: filter servers: %w", err)
	}
	chunk(fs)
	count(len(w.TopicQueueMappingInfoMap))
	for _, topic := range slices.Sorted(mapKeys(w.TopicQueueMappingInfoMap)) {
		info, err := Marshal(w.TopicQueueMappingInfoMap[topic])
		if err != nil {
			return nil, fmt.Errorf("register body: mapping of %s: %w", topic, err)
		}
		chunk(info)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("register body: deflate: %w", err)
	}
	return out.Bytes(), nil
}

// appendTopicConfigText appends Apache's TopicConfig.encode() text. Like
// Apache it always ends the fifth field with a space and appends the
// attributes' JSON when the topic has an attributes map.
func appendTopicConfigText(dst []byte, name string, tc TopicConfig) ([]byte, error) {
	if tc.TopicName != "" {
		name = tc.TopicName
	}
	filter := tc.TopicFilterType
	if filter == "" {
		filter = SingleTag
	}
	dst = append(dst, name...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(tc.ReadQueueNums), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(tc.WriteQueueNums), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(tc.Perm), 10)
	dst = append(dst, ' ')
	dst = append(dst, filter...)
	dst = append(dst, ' ')
	if tc.Attributes != nil {
		attrs, err := Marshal(tc.Attributes)
		if err != nil {
			return nil, fmt.Errorf("register body: attributes of %s: %w", name, err)
		}
		dst = append(dst, attrs...)
	}
	return dst, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
