// Package protocol holds RocketMQ's request bodies and their JSON in the
// fastjson dialect (docs/protocol.md §4): route data, cluster info, topic configs,
// registration bodies, KV tables, topic lists, and static-topic mappings.
//
// Struct fields are declared in alphabetical JSON-key order so that
// encoding/json writes keys the way fastjson does. Decoding goes through
// Unmarshal, which accepts fastjson's bare numeric map keys.
package protocol
