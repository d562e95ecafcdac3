package metrics

import "strings"

// Instrument names, label keys and label values as Apache RocketMQ 5.5.0
// defines them (broker/.../metrics/BrokerMetricsConstant.java,
// remoting/.../metrics/RemotingMetricsConstant.java,
// store/.../metrics/DefaultStoreMetricsConstant.java,
// broker/.../metrics/PopMetricsConstant.java). The Prometheus exporter adds
// the unit suffix (_milliseconds, _bytes) and _total to counters, so the
// scraped names are Apache's (testdata/apache-5.5.0-families.txt).
const (
	meterName = "broker-meter"

	gaugeProcessorWatermark = "rocketmq_processor_watermark"
	gaugeBrokerPermission   = "rocketmq_broker_permission"
	gaugeTopicNumber        = "rocketmq_topic_number"
	gaugeGroupNumber        = "rocketmq_consumer_group_number"

	counterMessagesIn    = "rocketmq_messages_in"
	counterMessagesOut   = "rocketmq_messages_out"
	counterThroughputIn  = "rocketmq_throughput_in"
	counterThroughputOut = "rocketmq_throughput_out"
	histMessageSize      = "rocketmq_message_size"
	histTopicCreateTime  = "rocketmq_topic_create_execution_time"
	histGroupCreateTime  = "rocketmq_consumer_group_create_execution_time"

	// Event families: they appear once the event happened.
	counterSendToDLQ  = "rocketmq_send_to_dlq_messages_total"
	counterCommits    = "rocketmq_commit_messages_total"
	counterRollbacks  = "rocketmq_rollback_messages_total"
	histFinishLatency = "rocketmq_finish_message_latency"
	gaugeHalfMessages = "rocketmq_half_messages"

	gaugeProducerConnections = "rocketmq_producer_connections"
	gaugeConsumerConnections = "rocketmq_consumer_connections"

	gaugeLagMessages      = "rocketmq_consumer_lag_messages"
	gaugeLagLatency       = "rocketmq_consumer_lag_latency"
	gaugeInflightMessages = "rocketmq_consumer_inflight_messages"
	gaugeQueueingLatency  = "rocketmq_consumer_queueing_latency"
	gaugeReadyMessages    = "rocketmq_consumer_ready_messages"

	histRPCLatency = "rocketmq_rpc_latency"

	gaugeStorageSize          = "rocketmq_storage_size"
	gaugeFlushBehind          = "rocketmq_storage_flush_behind_bytes"
	gaugeDispatchBehind       = "rocketmq_storage_dispatch_behind_bytes"
	gaugeMessageReserveTime   = "rocketmq_storage_message_reserve_time"
	gaugeTimerEnqueueLag      = "rocketmq_timer_enqueue_lag"
	gaugeTimerEnqueueLatency  = "rocketmq_timer_enqueue_latency"
	gaugeTimerDequeueLag      = "rocketmq_timer_dequeue_lag"
	gaugeTimerDequeueLatency  = "rocketmq_timer_dequeue_latency"
	gaugeTimerMessageSnapshot = "rocketmq_timer_message_snapshot"
	gaugeTimingMessages       = "rocketmq_timing_messages"
	counterTimerEnqueue       = "rocketmq_timer_enqueue_total"
	counterTimerDequeue       = "rocketmq_timer_dequeue_total"
	histDelayLatency          = "rocketmq_delay_message_latency"

	gaugePopOffsetBuffer     = "rocketmq_pop_offset_buffer_size"
	gaugePopCheckpointBuffer = "rocketmq_pop_checkpoint_buffer_size"
	gaugePopReviveLag        = "rocketmq_pop_revive_lag"
	gaugePopReviveLatency    = "rocketmq_pop_revive_latency"
	histPopBufferScanTime    = "rocketmq_pop_buffer_scan_time_consume"
	counterPopReviveIn       = "rocketmq_pop_revive_in_message_total"
	counterPopReviveOut      = "rocketmq_pop_revive_out_message_total"
	counterPopReviveRetry    = "rocketmq_pop_revive_retry_messages_total"

	unitMillis = "milliseconds"
	// unitMs is the unit Java gives rocketmq_finish_message_latency,
	// whose values are in fact seconds (EndTransactionProcessor divides
	// by 1000; the buckets are 5 s … 24 h): kept as Java has it.
	unitMs    = "ms"
	unitBytes = "bytes"
	unitSecs  = "seconds"
)

// Label keys.
const (
	labelCluster           = "cluster"
	labelNodeType          = "node_type"
	labelNodeID            = "node_id"
	labelAggregation       = "aggregation"
	labelTopic             = "topic"
	labelGroup             = "consumer_group"
	labelIsSystem          = "is_system"
	labelIsRetry           = "is_retry"
	labelMessageType       = "message_type"
	labelProcessor         = "processor"
	labelLanguage          = "language"
	labelVersion           = "version"
	labelConsumeMode       = "consume_mode"
	labelProtocolType      = "protocol_type"
	labelRequestCode       = "request_code"
	labelResponseCode      = "response_code"
	labelIsLongPolling     = "is_long_polling"
	labelResult            = "result"
	labelStorageType       = "storage_type"
	labelStorageMedium     = "storage_medium"
	labelTimerBound        = "timer_bound_s"
	labelQueueID           = "queue_id"
	labelInvocationStatus  = "invocation_status"
	labelReviveMessageType = "revive_message_type"
	labelPutStatus         = "put_status"

	nodeTypeBroker   = "broker" // BrokerMetricsConstant.NODE_TYPE_BROKER
	aggregationDelta = "delta"

	// ProtocolRemoting and ProtocolGrpc are the protocol_type values.
	ProtocolRemoting = "remoting"
	ProtocolGrpc     = "grpc"

	resultSuccess        = "success"
	resultOneway         = "oneway"
	storageTypeLocal     = "local"
	storageMediumDisk    = "disk"
	invocationSuccess    = "success"
	invocationFailure    = "failure"
	overflowTopicLabel   = "otel.metric.overflow"
	systemGroupPrefixLow = "cid_rmq_sys_"
)

// MessageType is the message_type label of messages_in, throughput_in and
// message_size (Java's TopicMessageType.getMetricsValue: lower case).
type MessageType uint8

// The message types a send is counted under.
const (
	Normal MessageType = iota
	Fifo
	Delay
	Transaction
	numMessageTypes
)

var messageTypeNames = [numMessageTypes]string{"normal", "fifo", "delay", "transaction"}

// String is the label value.
func (t MessageType) String() string {
	if t < numMessageTypes {
		return messageTypeNames[t]
	}
	return "unspecified"
}

// TimerDistSeconds are the timer_bound_s buckets of
// rocketmq_timer_message_snapshot (Java's TimerMetrics.timerDist).
var TimerDistSeconds = [...]int{5, 60, 300, 900, 3600, 14400, 28800, 86400}

// Bucket bounds of the histograms (Java's metric views): rpc latency in ms
// (RemotingMetricsManager.getMetricsView), message size in bytes and
// create times in ms (BrokerMetricsManager.registerMetricsView), pop buffer
// scan time in ms (PopMetricsManager.getMetricsView).
var (
	rpcLatencyBounds  = []float64{1, 3, 5, 7, 10, 100, 1000, 2000, 3000}
	messageSizeBounds = []float64{1024, 4 * 1024, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024}
	createTimeBounds  = []float64{10, 100, 1000, 3000, 5000}
	popScanBounds     = []float64{1, 10, 100, 1000, 2000, 3000}
	// finishBounds are seconds (BrokerMetricsManager commitLatencyBuckets).
	finishBounds = []float64{5, 60, 600, 3600, 12 * 3600, 24 * 3600}
	// delayLatencyBounds are seconds (DefaultStoreMetricsManager.getMetricsView:
	// 1 min, 10 min, 1 h, 12 h, 1 day, 3 days).
	delayLatencyBounds = []float64{60, 600, 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600}
)

// TypeOf is the message_type of a sent message from its properties (Java's
// BrokerMetricsManager.getMessageType): a prepared transaction message,
// else one with a sharding key (FIFO), else one with a delivery time, delay
// level or timer property (delay), else normal.
func TypeOf(props map[string]string) MessageType {
	if strings.EqualFold(props["TRAN_MSG"], "true") {
		return Transaction
	}
	if _, ok := props["__SHARDINGKEY"]; ok {
		return Fifo
	}
	for _, k := range [...]string{"__STARTDELIVERTIME", "DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS"} {
		if _, ok := props[k]; ok {
			return Delay
		}
	}
	return Normal
}
