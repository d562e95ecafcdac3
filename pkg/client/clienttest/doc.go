// Package clienttest runs an in-process fake RocketMQ cluster on real
// remoting servers (127.0.0.1, ephemeral ports) for tests of package client
// and the tools built on it: a fake nameserver (package fakens) answering
// GET_ROUTEINFO_BY_TOPIC and brokers that store messages in memory and
// answer sends (10, 310, 320), pulls (11, with long polling), offsets (14,
// 15, 29, 30, 31), client registration (34, 35), group members (38, with
// 40 sent on changes), queue locks (41, 42), send-backs (36),
// END_TRANSACTION (37), a simple pop (200050, 200051, 200053) and lite
// topics (200070, 200071, the liteTopic acks; lite.go); they can also send
// clients CHECK_TRANSACTION_STATE, RESET_CONSUMER_CLIENT_OFFSET,
// NOTIFY_UNSUBSCRIBE_LITE and any request (AskClient). Failures can be
// injected per broker.
package clienttest
