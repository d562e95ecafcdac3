// Package message is the message model shared by the broker, the SDK and the
// tools: the Message struct, the properties string (docs/protocol.md §5.4), the
// well-known property keys (§5.5), the stored record format that CommitLog
// files and pull bodies are made of (§5.6), sysFlag bits (§5.7), message ids
// (§5.8), compression (§5.9), the batch body (§5.3) and tag hash codes.
//
// Records are encoded exactly as Apache RocketMQ stores them, so a pull body
// is a run of stored bytes and Java or Go clients decode it unchanged. All
// integers are big-endian.
//
// Two levels of API: View is a zero-copy, validated window on one encoded
// record (what the store and the dispatcher use); Message is the decoded,
// allocated form (what producers, consumers and tools use).
package message
