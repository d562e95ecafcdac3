package protocol

// GET_POP_STATUS (request code 890050) is an rmq-go extension: Apache
// RocketMQ has no request that reports pop state. Its request header has
// the optional fields consumerGroup, topic, detail (per-queue rows) and
// maxQueues (cap on those rows); the response body is a PopStatusBody.
// JSON in the fastjson dialect: fields in alphabetical key order.

// Header fields of GET_POP_STATUS.
const (
	PopStatusFieldGroup     = "consumerGroup"
	PopStatusFieldTopic     = "topic"
	PopStatusFieldDetail    = "detail"
	PopStatusFieldMaxQueues = "maxQueues"
)

// PopStatusBody is one broker's pop state.
type PopStatusBody struct {
	BrokerName string `json:"brokerName"`
	// Groups has one entry per (consumer group, topic) with pop state on
	// this broker, sorted by group then topic. Topic is the topic the
	// group consumes; messages of its pop retry topics count under it.
	Groups []PopGroupStatus `json:"groups"`
	// Now is the broker's clock (ms) when the state was read: ages and
	// lags are relative to it.
	Now    int64           `json:"now"`
	Revive PopReviveStatus `json:"revive"`
	Totals PopStatusTotals `json:"totals"`
	// Truncated: per-queue rows were cut at maxQueues.
	Truncated bool `json:"truncated,omitempty"`
}

// PopGroupStatus is the pop state of one group on one topic.
type PopGroupStatus struct {
	// Backlog is messages of the topic's queues not yet popped by the
	// group (max offset − pop offset, queues with a pop offset only).
	Backlog int64 `json:"backlog"`
	// BlockedQueues counts orderly queues blocked now by an invisible,
	// un-acked message.
	BlockedQueues int `json:"blockedQueues"`
	// Checkpoints counts the pops (one per queue per pop) with messages
	// neither acked nor revived yet.
	Checkpoints int    `json:"checkpoints"`
	Group       string `json:"group"`
	// InFlight is messages popped and not acked (nor yet redelivered).
	InFlight int64 `json:"inFlight"`
	// OldestPopTime is the pop time (ms) of the oldest in-flight message;
	// 0 when none is in flight.
	OldestPopTime int64 `json:"oldestPopTime"`
	// Overdue is the part of InFlight whose invisible time has passed:
	// waiting for the revive service (or, orderly, for the next pop).
	Overdue int64 `json:"overdue"`
	// Queues are per-queue rows (only when detail was asked for).
	Queues []PopQueueStatus `json:"queues,omitempty"`
	// RetryBacklog is messages in the group's pop retry topics not yet
	// popped: redeliveries waiting for a consumer.
	RetryBacklog int64 `json:"retryBacklog"`
	// ReviveFailing counts checkpoints whose last revive failed (they are
	// retried with backoff).
	ReviveFailing int `json:"reviveFailing"`
	// ReviveLagMillis is how long the oldest overdue checkpoint has been
	// due: how far the revive service is behind for this group.
	ReviveLagMillis int64 `json:"reviveLagMillis"`
	// SuspendedPops is POP_MESSAGE requests of the group waiting (long
	// polling) on the topic.
	SuspendedPops int    `json:"suspendedPops"`
	Topic         string `json:"topic"`
}

// PopQueueStatus is one queue of a PopGroupStatus: a queue of the topic
// or of one of its pop retry topics (Retry set, Topic the retry topic).
type PopQueueStatus struct {
	Blocked bool `json:"blocked"`
	// BlockedUntil is when an orderly queue unblocks (ms), 0 if it is not
	// blocked.
	BlockedUntil  int64 `json:"blockedUntil"`
	Checkpoints   int   `json:"checkpoints"`
	InFlight      int64 `json:"inFlight"`
	MaxOffset     int64 `json:"maxOffset"`
	OldestPopTime int64 `json:"oldestPopTime"`
	Orderly       bool  `json:"orderly"`
	Overdue       int64 `json:"overdue"`
	// PopOffset is the group's committed pop offset, −1 when it has none.
	PopOffset int64  `json:"popOffset"`
	QueueID   int32  `json:"queueId"`
	Retry     bool   `json:"retry"`
	Topic     string `json:"topic"`
}

// PopReviveStatus is the revive service's progress, broker-wide.
type PopReviveStatus struct {
	// Checkpoints is every checkpoint waiting to be settled (acked or
	// revived), all groups.
	Checkpoints int64 `json:"checkpoints"`
	// DeadLettered, Failed and Revived count messages since the broker
	// started: moved to %DLQ%, failed revive attempts, redelivered through
	// a retry topic.
	DeadLettered int64 `json:"deadLettered"`
	Failed       int64 `json:"failed"`
	// LagMillis is how long the oldest due checkpoint has been due (0: the
	// revive service keeps up).
	LagMillis int64 `json:"lagMillis"`
	// LastRoundCount and LastRoundTime describe the last revive round:
	// checkpoints it looked at, and when it ran (ms, 0 never).
	LastRoundCount int64 `json:"lastRoundCount"`
	LastRoundTime  int64 `json:"lastRoundTime"`
	// OldestDue is the earliest due time (ms) of any checkpoint, 0 if none.
	OldestDue int64 `json:"oldestDue"`
	// Overdue counts checkpoints due now or earlier.
	Overdue int64 `json:"overdue"`
	// Queues are the journal queues (the revive topic's queues).
	Queues  []PopReviveQueue `json:"queues"`
	Revived int64            `json:"revived"`
	// Topic is the revive topic that holds the pop journal.
	Topic string `json:"topic"`
}

// PopReviveQueue is one queue of the pop journal: how far its records are
// applied to the pop state (they are applied as they are written, so
// Applied < MaxOffset only while a record is in flight or after a failed
// apply).
type PopReviveQueue struct {
	Applied   int64 `json:"applied"`
	MaxOffset int64 `json:"maxOffset"`
	QueueID   int32 `json:"queueId"`
}

// PopStatusTotals sums the groups reported (after the group and topic
// filters) plus the broker's suspended requests.
type PopStatusTotals struct {
	BlockedQueues int   `json:"blockedQueues"`
	Checkpoints   int   `json:"checkpoints"`
	Groups        int   `json:"groups"`
	InFlight      int64 `json:"inFlight"`
	OldestPopTime int64 `json:"oldestPopTime"`
	Overdue       int64 `json:"overdue"`
	// SuspendedNotifications and SuspendedPops are the broker's waiting
	// NOTIFICATION and POP_MESSAGE requests, all groups.
	SuspendedNotifications int `json:"suspendedNotifications"`
	SuspendedPops          int `json:"suspendedPops"`
}
