// Package pop is POP consumption on the broker (Java's PopMessageProcessor,
// AckMessageProcessor, ChangeInvisibleTimeProcessor, PeekMessageProcessor,
// NotificationProcessor, PollingInfoProcessor, QueryAssignmentProcessor,
// PopReviveService and ConsumerOrderInfoManager; docs/protocol.md §3.3).
//
// A pop hands out messages of a queue and makes them invisible for a while;
// the consumer acks each one, or changes its invisible time; what is not
// acked in time is redelivered through the group's pop retry topic
// (%RETRY%<group>_<topic>, Java 5's default; %RETRY%<group>+<topic> with
// enableRetryTopicV2) with reconsumeTimes+1, and past the group's
// retryMaxTimes moved to %DLQ%<group>. An orderly pop instead blocks its
// queue for the group until the messages are acked or their invisible time
// passes; the queue's offset only moves on ack, and re-popped messages
// carry their consume count (orderCountInfo).
//
// # State
//
// The state lives in Pebble under kv.PrefixPop (see keys.go): one
// checkpoint per non-orderly pop of a queue (its offsets, ack and revive
// bit maps, due time), a revive index by due time, one order info per
// orderly queue, and a shadow of each queue's pop offset.
//
// # Durability
//
// The broker's Pebble runs without its WAL: the CommitLog is the log, and a
// kill -9 loses the writes since the last memtable flush. So every state
// change is first appended as a journal record to a queue of the revive
// topic rmq_sys_REVIVE_LOG_<cluster> (the topic Java uses for the same
// purpose), then applied in one Pebble batch that also stores the
// journal queue's next position. A per-journal-queue mutex makes append
// and apply one step, so each queue's records are applied in order and
// Pebble (which persists a prefix of its batches) always holds exactly the
// records before the stored position. New replays the records after it
// before the broker serves: the state after a crash is the state before
// it, as far as the CommitLog kept the records (all of them under kill -9;
// under power loss, what the flush mode made durable).
//
// The journal is replicated with the CommitLog. A pop is answered once
// the slaves hold its checkpoint when the broker waits for them
// (Deps.Replicas: a SYNC_MASTER, or a controller-mode master), as Apache's
// checkpoint messages are; acks do not wait (replicated.go). A slave applies the records it replicates as they are
// dispatched (its revive loop, which revives nothing there), and CatchUp
// applies the rest when it becomes master, before it takes pops: the old
// master's checkpoints are revived by the new one. A truncation of the
// CommitLog to a new master's lowers the journal positions to the cut
// (Store.AddTruncateListener).
//
// Acks are group-committed: the acks of one journal queue that arrive
// while a batch of them is being recorded wait, and are then checked and
// recorded together, in one journal record ("acks") and one Pebble batch;
// each is answered only after that record was written and applied, as a
// lone ack is. Under the lock, checkpoints are read through a small
// per-queue cache of the checkpoints the journal last applied (a miss
// reads Pebble), so an ack of a recent pop reads no Pebble at all.
//
// The ack of a message and its revive take the same journal queue lock
// (the checkpoint's), so exactly one of them wins: an acked message is
// never revived, and a revived one is never reported acked (its ack
// answers NO_MESSAGE). Consumer offsets are flushed separately every few
// seconds; a crash could move them back and hand acked messages out again,
// so the pop offset of each queue is also written with the journal (the
// shadow) and New raises the offset table to it. A clean Close flushes the
// offsets and drops the shadows, so an offset reset made before a clean
// restart is kept.
//
// # Lite topics
//
// This package serves no lite topic. The broker's lite processor
// (broker/lite/poplite) wraps ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and
// NOTIFICATION and answers the requests of lite consumers (liteTopic or
// liteConsumer set) before they get here; should one arrive anyway it is
// refused with ILLEGAL_OPERATION. BATCH_ACK_MESSAGE entries of lite messages
// are refused too (docs/lite-topics.md §6.7).
package pop
