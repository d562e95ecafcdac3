// Package client is a Go client SDK for RocketMQ brokers that speaks the
// remoting protocol (docs/protocol.md). It talks to any RocketMQ 4.x/5.x
// nameserver and broker, Apache's or ours.
//
//   - Producer: sync, async, one-way, batch and queue-selected sends with
//     retries on another broker and fault avoidance (a broker that failed
//     or answered slowly is skipped for a while); SendOrderly for ordered
//     messages by sharding key; delay levels and timer messages through the
//     message's properties.
//   - TransactionProducer: half message, local transaction, END_TRANSACTION,
//     and a checker answering the brokers' CHECK_TRANSACTION_STATE.
//   - PushConsumer: clustering (queues shared out with
//     AllocateAveragely, rebalanced every 20 s and when the group changes)
//     or broadcasting (offsets in a local file, as Java's
//     LocalFileOffsetStore); concurrent consumption with retries through
//     the group's retry topic, or orderly consumption with broker-side queue
//     locks; offsets committed every 5 s and at shutdown; answers the
//     brokers' running-info, consumer-status, consume-directly and
//     offset-reset requests.
//   - SimpleConsumer: pop (receive with an invisible time, ack, change
//     invisible time), concurrent or orderly (FIFO per queue).
//   - PullConsumer: pull, offsets, and a simple ConsumeLoop over all queues
//     of a topic.
//   - Lite topics (docs/lite-topics.md): message.SetLiteTopic names the lite
//     topic of a message sent to a LITE parent topic (checked as Java's
//     client does: a legal name, no message group, delivery time or
//     priority; sent to the lite topic's home queue). LitePushConsumer
//     subscribes a lite group to lite topics by name (SubscribeLite with
//     an OffsetOption, UnsubscribeLite, a full sync every 30 s, brokers'
//     NOTIFY_UNSUBSCRIBE_LITE), long-polls every broker of the parent with
//     POP_LITE_MESSAGE and consumes FIFO per lite topic, different lite
//     topics in parallel; failures come back after a backoff (change of
//     invisible time), and after MaxReconsumeTimes go to the group's DLQ.
//     ErrLiteTopicQuotaExceeded and ErrLiteSubscriptionQuotaExceeded match
//     the brokers' 2017 and 2018.
//
// Behaviour follows Apache's Java client where clients differ: routes are
// looked up on the nameserver (falling back to TBW102 for topics that do not
// exist yet) and refreshed every 30 s, brokers that left every route are
// forgotten, heartbeats go to brokers every 30 s, sends use SEND_MESSAGE_V2
// (310) with short header names, and response codes are handled as in
// docs/protocol.md §2.
//
// Authentication: a broker with authentication on (Apache's ACL 2.0
// authenticationEnabled, or ACL 1.0 aclEnable) refuses unsigned requests
// with NO_PERMISSION (16). Set CommonConfig.Credentials in any client's
// config (ProducerConfig, PushConsumerConfig, SimpleConsumerConfig,
// PullConsumerConfig, LitePushConsumerConfig embed CommonConfig) to the
// user's name and password (ACL 2.0) or access and secret key (ACL 1.0);
// every request is then signed as Java's AclClientRPCHook signs it
// (pkg/credentials, docs/protocol.md §7).
//
// Every client owns its connections and background goroutines; Shutdown
// stops all of them (none outlives it) and ends pending long polls. Logs go
// to the *slog.Logger in the config (discarded when nil). Nothing in this
// package is global.
package client
