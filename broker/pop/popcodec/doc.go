// Package popcodec holds the text and JSON formats pop exchanges with
// clients (docs/protocol.md §3.3, §4.10): the receipt handle's extraInfo,
// pop retry-topic names, the offset-info headers of a pop response and
// BATCH_ACK_MESSAGE bodies. It imports nothing of the broker, so its fuzz
// targets build without the store (an instrumented binary of the whole
// broker runs a fuzz target several times slower).
package popcodec
