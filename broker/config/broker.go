package config

import (
	"runtime"
	"time"
)

// BrokerConfig holds Apache's BrokerConfig (and BrokerIdentity) keys. Field
// tags name the broker.conf key; `important` marks what `broker -m` prints
// (Java's @ImportantField). Durations are milliseconds in property files.
//
// Many keys are accepted for compatibility although no feature of this
// broker reads them, so that a broker.conf written for Java loads unchanged:
// those carry `effect:"none"` (the one list of them: the broker warns when
// a configuration sets one, `-p` marks them, and docs/operations.md
// "Accepted keys with no effect" is checked against the tags by
// TestNoEffectKeysDocumented; TestNoEffectKeysUnread checks that no code
// outside this package reads them).
type BrokerConfig struct {
	// Identity.
	BrokerName        string `key:"brokerName" important:"true" readonly:"true"`
	BrokerClusterName string `key:"brokerClusterName" important:"true" readonly:"true"`
	BrokerID          int64  `key:"brokerId" important:"true" readonly:"true"`

	BrokerConfigPath string `key:"brokerConfigPath" readonly:"true" effect:"none"`
	RocketmqHome     string `key:"rocketmqHome" readonly:"true"`
	NamesrvAddr      string `key:"namesrvAddr" important:"true"`
	BrokerIP1        string `key:"brokerIP1" important:"true" readonly:"true"`
	BrokerIP2        string `key:"brokerIP2" important:"true" readonly:"true"`
	RegionID         string `key:"regionId"`

	RecoverConcurrently                bool   `key:"recoverConcurrently" important:"true" effect:"none"`
	BrokerPermission                   int    `key:"brokerPermission" important:"true"`
	DefaultTopicQueueNums              int    `key:"defaultTopicQueueNums"`
	AutoCreateTopicEnable              bool   `key:"autoCreateTopicEnable" important:"true"`
	ClusterTopicEnable                 bool   `key:"clusterTopicEnable" important:"true"`
	BrokerTopicEnable                  bool   `key:"brokerTopicEnable"`
	AutoCreateSubscriptionGroup        bool   `key:"autoCreateSubscriptionGroup" important:"true"`
	MessageStorePlugIn                 string `key:"messageStorePlugIn" important:"true" effect:"none"`
	MsgTraceTopicName                  string `key:"msgTraceTopicName" important:"true"`
	TraceTopicEnable                   bool   `key:"traceTopicEnable" important:"true"`
	TraceOn                            bool   `key:"traceOn"`
	ValidateSystemTopicWhenUpdateTopic bool   `key:"validateSystemTopicWhenUpdateTopic"`
	EnableMixedMessageType             bool   `key:"enableMixedMessageType"`
	ClearRetryTopicWhenDeleteTopic     bool   `key:"clearRetryTopicWhenDeleteTopic"`
	ConfigBlackList                    string `key:"configBlackList" readonly:"true"`

	// Message types and per-type size limits on the send path (package
	// broker/msgtype). enableTopicMessageTypeCheck is Apache's ProxyConfig
	// key (default true there, for gRPC clients); our broker applies it to
	// remoting sends and, like Apache's broker, which never checks, defaults
	// to false. maxDelayMessageSize and maxTransactionMessageSize are ours
	// (no Apache key; Alibaba Cloud's documented limits are the defaults):
	// body limits of delay/timer and transactional messages, ≤ 0 = only
	// maxMessageSize applies.
	EnableTopicMessageTypeCheck bool `key:"enableTopicMessageTypeCheck"`
	MaxDelayMessageSize         int  `key:"maxDelayMessageSize"`
	MaxTransactionMessageSize   int  `key:"maxTransactionMessageSize"`

	// gRPC MessagingService for the RocketMQ 5.x clients (package
	// broker/grpcserver; in development, issue 17). EnableGrpcServer [ours]
	// turns it on (default off). GrpcServerPort, TLSKeyPath and TLSCertPath
	// are Apache ProxyConfig's keys (grpcServerPort default 8081, 0 picks a
	// free port); with no key/certificate configured the server makes a
	// self-signed one at start, as the proxy's tlsTestModeEnable.
	EnableGrpcServer bool   `key:"enableGrpcServer" readonly:"true"`
	GrpcServerPort   int    `key:"grpcServerPort" readonly:"true"`
	TLSKeyPath       string `key:"tlsKeyPath" readonly:"true"`
	TLSCertPath      string `key:"tlsCertPath" readonly:"true"`
	// GrpcStreamWorkers [ours] is how many goroutines are kept to run gRPC
	// requests (grpc-go's NumStreamWorkers); a request arriving while all
	// are busy runs on a new goroutine. A kept goroutine has its stack
	// grown already: a fresh one per request spent about a quarter of a
	// send's CPU growing its stack. 0 starts a goroutine per request.
	GrpcStreamWorkers int `key:"grpcStreamWorkers" readonly:"true"`
	// The gRPC consumer limits, Apache ProxyConfig's keys and defaults
	// (broker/grpcserver.ConsumeLimits): a receive's long polling is bounded
	// by the min and max (the max is also the clients' long polling
	// timeout), the batch size is the clients' receive batch size, and a
	// receive's invisible time must be within minInvisibleTimeMillsForRecv
	// and maxInvisibleTimeMills.
	GrpcClientConsumerMinLongPollingTimeoutMillis int64 `key:"grpcClientConsumerMinLongPollingTimeoutMillis"`
	GrpcClientConsumerMaxLongPollingTimeoutMillis int64 `key:"grpcClientConsumerMaxLongPollingTimeoutMillis"`
	GrpcClientConsumerLongPollingBatchSize        int   `key:"grpcClientConsumerLongPollingBatchSize"`
	MinInvisibleTimeMillsForRecv                  int64 `key:"minInvisibleTimeMillsForRecv"`
	MaxInvisibleTimeMills                         int64 `key:"maxInvisibleTimeMills"`
	// A push consumer's receives ask for their receipt handles to be
	// renewed until acked (auto_renew): they are popped for
	// renewSliceTimeMillis and renewed by as much when less than
	// renewAheadTimeMillis is left, for renewMaxTimeMillis at most (the
	// proxy's keys and defaults).
	RenewSliceTimeMillis int64 `key:"renewSliceTimeMillis"`
	RenewAheadTimeMillis int64 `key:"renewAheadTimeMillis"`
	RenewMaxTimeMillis   int64 `key:"renewMaxTimeMillis"`

	// TimerSlackMicros [ours]: the Linux timer slack the broker process
	// runs with, in µs (0: the inherited one, the kernel's 50 µs unless a
	// launcher such as systemd's TimerSlackNSec= set another). It spares
	// the Go runtime's monitor thread thousands of wake-ups a second under
	// load (broker/internal/timerslack; docs/operations.md "Timer slack").
	// Set once at start: the broker re-executes itself to apply it.
	TimerSlackMicros int `key:"timerSlackMicros" readonly:"true"`

	// Thread pools (worker counts and queue capacities of the executors).
	SendMessageThreadPoolNums          int `key:"sendMessageThreadPoolNums"`
	PutMessageFutureThreadPoolNums     int `key:"putMessageFutureThreadPoolNums" effect:"none"`
	PullMessageThreadPoolNums          int `key:"pullMessageThreadPoolNums"`
	LitePullMessageThreadPoolNums      int `key:"litePullMessageThreadPoolNums"`
	AckMessageThreadPoolNums           int `key:"ackMessageThreadPoolNums"`
	ProcessReplyMessageThreadPoolNums  int `key:"processReplyMessageThreadPoolNums"`
	QueryMessageThreadPoolNums         int `key:"queryMessageThreadPoolNums"`
	AdminBrokerThreadPoolNums          int `key:"adminBrokerThreadPoolNums"`
	ClientManageThreadPoolNums         int `key:"clientManageThreadPoolNums"`
	ConsumerManageThreadPoolNums       int `key:"consumerManageThreadPoolNums"`
	LoadBalanceProcessorThreadPoolNums int `key:"loadBalanceProcessorThreadPoolNums"`
	HeartbeatThreadPoolNums            int `key:"heartbeatThreadPoolNums"`
	RecoverThreadPoolNums              int `key:"recoverThreadPoolNums" effect:"none"`
	EndTransactionThreadPoolNums       int `key:"endTransactionThreadPoolNums"`

	SendThreadPoolQueueCapacity            int `key:"sendThreadPoolQueueCapacity" important:"true"`
	PutThreadPoolQueueCapacity             int `key:"putThreadPoolQueueCapacity" effect:"none"`
	PullThreadPoolQueueCapacity            int `key:"pullThreadPoolQueueCapacity"`
	LitePullThreadPoolQueueCapacity        int `key:"litePullThreadPoolQueueCapacity"`
	AckThreadPoolQueueCapacity             int `key:"ackThreadPoolQueueCapacity"`
	ReplyThreadPoolQueueCapacity           int `key:"replyThreadPoolQueueCapacity"`
	QueryThreadPoolQueueCapacity           int `key:"queryThreadPoolQueueCapacity"`
	ClientManagerThreadPoolQueueCapacity   int `key:"clientManagerThreadPoolQueueCapacity"`
	ConsumerManagerThreadPoolQueueCapacity int `key:"consumerManagerThreadPoolQueueCapacity"`
	HeartbeatThreadPoolQueueCapacity       int `key:"heartbeatThreadPoolQueueCapacity"`
	EndTransactionPoolQueueCapacity        int `key:"endTransactionPoolQueueCapacity"`
	AdminBrokerThreadPoolQueueCapacity     int `key:"adminBrokerThreadPoolQueueCapacity"`
	LoadBalanceThreadPoolQueueCapacity     int `key:"loadBalanceThreadPoolQueueCapacity"`

	// Fast failure: requests queued longer than this are answered SYSTEM_BUSY.
	BrokerFastFailureEnable         bool          `key:"brokerFastFailureEnable"`
	WaitTimeMillsInSendQueue        time.Duration `key:"waitTimeMillsInSendQueue"`
	WaitTimeMillsInPullQueue        time.Duration `key:"waitTimeMillsInPullQueue"`
	WaitTimeMillsInLitePullQueue    time.Duration `key:"waitTimeMillsInLitePullQueue"`
	WaitTimeMillsInHeartbeatQueue   time.Duration `key:"waitTimeMillsInHeartbeatQueue"`
	WaitTimeMillsInTransactionQueue time.Duration `key:"waitTimeMillsInTransactionQueue"`
	WaitTimeMillsInAckQueue         time.Duration `key:"waitTimeMillsInAckQueue"`
	WaitTimeMillsInAdminBrokerQueue time.Duration `key:"waitTimeMillsInAdminBrokerQueue"`
	StartAcceptSendRequestTimeStamp int64         `key:"startAcceptSendRequestTimeStamp"`

	// Consumer offsets and client management.
	FlushConsumerOffsetInterval        time.Duration `key:"flushConsumerOffsetInterval"`
	FlushConsumerOffsetHistoryInterval time.Duration `key:"flushConsumerOffsetHistoryInterval" effect:"none"`
	NotifyConsumerIdsChangedEnable     bool          `key:"notifyConsumerIdsChangedEnable"`
	ChannelExpiredTimeout              time.Duration `key:"channelExpiredTimeout"`
	SubscriptionExpiredTimeout         time.Duration `key:"subscriptionExpiredTimeout"`
	EnableBroadcastOffsetStore         bool          `key:"enableBroadcastOffsetStore" effect:"none"`
	BroadcastOffsetExpireSecond        int64         `key:"broadcastOffsetExpireSecond" effect:"none"`
	BroadcastOffsetExpireMaxSecond     int64         `key:"broadcastOffsetExpireMaxSecond" effect:"none"`
	UseServerSideResetOffset           bool          `key:"useServerSideResetOffset"`
	ConsumerOffsetUpdateVersionStep    int64         `key:"consumerOffsetUpdateVersionStep" effect:"none"`
	DelayOffsetUpdateVersionStep       int64         `key:"delayOffsetUpdateVersionStep" effect:"none"`
	LockInStrictMode                   bool          `key:"lockInStrictMode" effect:"none"`
	EnableRegisterProducer             bool          `key:"enableRegisterProducer"`
	EnableCreateSysGroup               bool          `key:"enableCreateSysGroup"`
	UseStaticSubscription              bool          `key:"useStaticSubscription" effect:"none"`

	// Pull.
	LongPollingEnable     bool          `key:"longPollingEnable"`
	ShortPollingTimeMills time.Duration `key:"shortPollingTimeMills"`
	TransferMsgByHeap     bool          `key:"transferMsgByHeap" effect:"none"`
	SlaveReadEnable       bool          `key:"slaveReadEnable"`
	// SlaveSyncCheckInterval / SlaveSyncFullInterval [ours]: a classic
	// SLAVE checks every CheckInterval and copies its master's metadata
	// once FullInterval passed since the last copy (Apache's fixed 3 s and
	// 60 s; broker/slavesync).
	SlaveSyncCheckInterval time.Duration `key:"slaveSyncCheckInterval"`
	SlaveSyncFullInterval  time.Duration `key:"slaveSyncFullInterval"`
	// VipChannelListenEnable [ours]: listen on the listen port − 2
	// (Apache's fast port) for what Apache slaves ask there (the timer
	// checkpoint and metrics); Apache always listens there.
	VipChannelListenEnable             bool          `key:"vipChannelListenEnable"`
	DisableConsumeIfConsumerReadSlowly bool          `key:"disableConsumeIfConsumerReadSlowly" effect:"none"`
	ConsumerFallbehindThreshold        int64         `key:"consumerFallbehindThreshold" effect:"none"`
	LitePullMessageEnable              bool          `key:"litePullMessageEnable"`
	EnableCalcFilterBitMap             bool          `key:"enableCalcFilterBitMap" effect:"none"`
	RejectPullConsumerEnable           bool          `key:"rejectPullConsumerEnable"`
	ExpectConsumerNumUseFilter         int           `key:"expectConsumerNumUseFilter" effect:"none"`
	MaxErrorRateOfBloomFilter          int           `key:"maxErrorRateOfBloomFilter" effect:"none"`
	FilterDataCleanTimeSpan            time.Duration `key:"filterDataCleanTimeSpan" effect:"none"`
	FilterSupportRetry                 bool          `key:"filterSupportRetry" effect:"none"`
	EnablePropertyFilter               bool          `key:"enablePropertyFilter"`
	EnableNetWorkFlowControl           bool          `key:"enableNetWorkFlowControl" effect:"none"`
	HighSpeedMode                      bool          `key:"highSpeedMode" effect:"none"`
	CommercialBaseCount                int           `key:"commercialBaseCount" effect:"none"`
	CommercialSizePerMsg               int           `key:"commercialSizePerMsg" effect:"none"`
	AccountStatsEnable                 bool          `key:"accountStatsEnable" effect:"none"`
	AccountStatsPrintZeroValues        bool          `key:"accountStatsPrintZeroValues" effect:"none"`
	EnableDetailStat                   bool          `key:"enableDetailStat" effect:"none"`
	AutoDeleteUnusedStats              bool          `key:"autoDeleteUnusedStats" effect:"none"`
	EnableLmqStats                     bool          `key:"enableLmqStats" effect:"none"`
	EstimateAccumulation               bool          `key:"estimateAccumulation" effect:"none"`

	// Nameserver registration.
	RegisterBrokerTimeoutMills      time.Duration `key:"registerBrokerTimeoutMills"`
	RegisterNameServerPeriod        time.Duration `key:"registerNameServerPeriod"`
	UpdateNameServerAddrPeriod      time.Duration `key:"updateNameServerAddrPeriod" effect:"none"`
	FetchNamesrvAddrInterval        time.Duration `key:"fetchNamesrvAddrInterval" effect:"none"`
	ForceRegister                   bool          `key:"forceRegister"`
	CompressedRegister              bool          `key:"compressedRegister"`
	EnableSingleTopicRegister       bool          `key:"enableSingleTopicRegister" effect:"none"`
	EnableSplitRegistration         bool          `key:"enableSplitRegistration"`
	SplitRegistrationSize           int           `key:"splitRegistrationSize"`
	EnableSplitMetadata             bool          `key:"enableSplitMetadata"`
	SplitMetadataSize               int           `key:"splitMetadataSize"`
	FetchNameSrvAddrByDNSLookup     bool          `key:"fetchNameSrvAddrByDnsLookup" important:"true" effect:"none"`
	FetchNamesrvAddrByAddressServer bool          `key:"fetchNamesrvAddrByAddressServer" important:"true" effect:"none"`
	SendHeartbeatTimeoutMillis      time.Duration `key:"sendHeartbeatTimeoutMillis" effect:"none"`
	BrokerHeartbeatInterval         time.Duration `key:"brokerHeartbeatInterval"`
	BrokerNotActiveTimeoutMillis    time.Duration `key:"brokerNotActiveTimeoutMillis"`
	CompatibleWithOldNameSrv        bool          `key:"compatibleWithOldNameSrv" effect:"none"`
	SyncBrokerMemberGroupPeriod     time.Duration `key:"syncBrokerMemberGroupPeriod" effect:"none"`

	// Transactions.
	RejectTransactionMessage       bool          `key:"rejectTransactionMessage" important:"true"`
	TransactionTimeOut             time.Duration `key:"transactionTimeOut" important:"true"`
	TransactionCheckMax            int           `key:"transactionCheckMax" important:"true"`
	TransactionCheckInterval       time.Duration `key:"transactionCheckInterval" important:"true"`
	TransactionMetricFlushInterval time.Duration `key:"transactionMetricFlushInterval" important:"true" effect:"none"`
	TransactionOpMsgMaxSize        int           `key:"transactionOpMsgMaxSize"`
	TransactionOpBatchInterval     time.Duration `key:"transactionOpBatchInterval" effect:"none"`

	// Request/reply, recall, forwarding.
	StoreReplyMessageEnable           bool          `key:"storeReplyMessageEnable" important:"true"`
	AllowRecallWhenBrokerNotWriteable bool          `key:"allowRecallWhenBrokerNotWriteable"`
	RecallMessageEnable               bool          `key:"recallMessageEnable"`
	ForwardTimeout                    time.Duration `key:"forwardTimeout"`
	AsyncSendEnable                   bool          `key:"asyncSendEnable" effect:"none"`

	// POP consumption.
	PopPollingSize                       int           `key:"popPollingSize"`
	PopPollingMapSize                    int           `key:"popPollingMapSize" effect:"none"`
	PopPollingMapExpireTimeSeconds       int           `key:"popPollingMapExpireTimeSeconds" effect:"none"`
	MaxPopPollingSize                    int64         `key:"maxPopPollingSize"`
	ReviveQueueNum                       int           `key:"reviveQueueNum"`
	ReviveInterval                       time.Duration `key:"reviveInterval"`
	ReviveMaxSlow                        int64         `key:"reviveMaxSlow" effect:"none"`
	ReviveScanTime                       time.Duration `key:"reviveScanTime" effect:"none"`
	EnableSkipLongAwaitingAck            bool          `key:"enableSkipLongAwaitingAck" effect:"none"`
	EnablePopLog                         bool          `key:"enablePopLog" effect:"none"`
	EnablePopBufferMerge                 bool          `key:"enablePopBufferMerge" effect:"none"`
	PopCkStayBufferTime                  time.Duration `key:"popCkStayBufferTime" effect:"none"`
	PopCkStayBufferTimeOut               time.Duration `key:"popCkStayBufferTimeOut" effect:"none"`
	PopCkMaxBufferSize                   int           `key:"popCkMaxBufferSize" effect:"none"`
	PopCkOffsetMaxQueueSize              int           `key:"popCkOffsetMaxQueueSize" effect:"none"`
	EnablePopBatchAck                    bool          `key:"enablePopBatchAck" effect:"none"`
	PopLongPollingForceNotifyInterval    time.Duration `key:"popLongPollingForceNotifyInterval" effect:"none"`
	EnableNotifyBeforePopCalculateLag    bool          `key:"enableNotifyBeforePopCalculateLag" effect:"none"`
	EnableNotifyAfterPopOrderLockRelease bool          `key:"enableNotifyAfterPopOrderLockRelease"`
	InitPopOffsetByCheckMsgInMem         bool          `key:"initPopOffsetByCheckMsgInMem"`
	RetrieveMessageFromPopRetryTopicV1   bool          `key:"retrieveMessageFromPopRetryTopicV1"`
	EnableRetryTopicV2                   bool          `key:"enableRetryTopicV2"`
	PopFromRetryProbability              int           `key:"popFromRetryProbability"`
	PopResponseReturnActualRetryTopic    bool          `key:"popResponseReturnActualRetryTopic"`
	PopInflightMessageThreshold          int64         `key:"popInflightMessageThreshold" effect:"none"`
	EnablePopMessageThreshold            bool          `key:"enablePopMessageThreshold" effect:"none"`
	SkipWhenCKRePutReachMaxTimes         bool          `key:"skipWhenCKRePutReachMaxTimes" effect:"none"`
	AppendAckAsync                       bool          `key:"appendAckAsync" effect:"none"`
	AppendCkAsync                        bool          `key:"appendCkAsync" effect:"none"`
	RealTimeNotifyConsumerChange         bool          `key:"realTimeNotifyConsumerChange" effect:"none"`
	ServerLoadBalancerEnable             bool          `key:"serverLoadBalancerEnable"`
	DefaultMessageRequestMode            string        `key:"defaultMessageRequestMode"`
	DefaultPopShareQueueNum              int           `key:"defaultPopShareQueueNum"`
	LoadBalancePollNameServerInterval    time.Duration `key:"loadBalancePollNameServerInterval"`
	CleanOfflineBrokerInterval           time.Duration `key:"cleanOfflineBrokerInterval" effect:"none"`
	PopOrderLockTimerTickMs              time.Duration `key:"popOrderLockTimerTickMs" effect:"none"`
	PopOrderLockTimerTicksPerWheel       int           `key:"popOrderLockTimerTicksPerWheel" effect:"none"`

	// Lite topics (docs/lite-topics.md §2.3).
	LiteEventCheckInterval time.Duration `key:"liteEventCheckInterval"`
	LiteTTLCheckInterval   time.Duration `key:"liteTtlCheckInterval"`
	// LiteSweepWorkMs / LiteSweepRestMs [ours]: the lite sweep sleeps
	// Rest at its yield points once Work has passed since its last rest
	// (Rest 0: never), so it leaves the CPU to sends.
	LiteSweepWorkMs                                time.Duration `key:"liteSweepWorkMs"`
	LiteSweepRestMs                                time.Duration `key:"liteSweepRestMs"`
	MinLiteTTL                                     time.Duration `key:"minLiteTTl"`
	LiteSubscriptionCheckInterval                  time.Duration `key:"liteSubscriptionCheckInterval"`
	LiteSubscriptionCheckTimeoutMills              time.Duration `key:"liteSubscriptionCheckTimeoutMills"`
	MaxLiteSubscriptionCount                       int64         `key:"maxLiteSubscriptionCount"`
	MaxClientEventCount                            int64         `key:"maxClientEventCount"`
	LiteEventCapacityCacheTTLMs                    time.Duration `key:"liteEventCapacityCacheTtlMs"`
	LiteEventFullDispatchDelayTime                 time.Duration `key:"liteEventFullDispatchDelayTime"`
	LiteEventFullDispatchDelayTimeForWildcardGroup time.Duration `key:"liteEventFullDispatchDelayTimeForWildcardGroup"`
	PersistConsumerOffsetIncrementally             bool          `key:"persistConsumerOffsetIncrementally" effect:"none"`
	EnableLitePopLog                               bool          `key:"enableLitePopLog" effect:"none"`
	LiteLagLatencyCollectEnable                    bool          `key:"liteLagLatencyCollectEnable"` // lite pops record lag times (broker/metrics lite lag)
	LiteLagLatencyMetricsEnable                    bool          `key:"liteLagLatencyMetricsEnable"` // lite lag latency in rocketmq_consumer_lag_latency
	LiteLagCountMetricsEnable                      bool          `key:"liteLagCountMetricsEnable"`   // lite lag count in rocketmq_consumer_lag_messages / ready_messages
	LiteLagLatencyTopK                             int           `key:"liteLagLatencyTopK"`          // lag times kept per (parent, group)
	MaxLiteTopicSize                               int           `key:"maxLiteTopicSize"`
	MaxSyncLiteSubscriptionRate                    int           `key:"maxSyncLiteSubscriptionRate" effect:"none"`

	// Replication, controller mode (Apache's
	// org/apache/rocketmq/common/BrokerConfig.java keys).
	EnableSlaveActingMaster         bool          `key:"enableSlaveActingMaster"`
	EnableRemoteEscape              bool          `key:"enableRemoteEscape" effect:"none"`
	SkipPreOnline                   bool          `key:"skipPreOnline" effect:"none"`
	EnableControllerMode            bool          `key:"enableControllerMode" readonly:"true"`
	ControllerAddr                  string        `key:"controllerAddr"`
	FetchControllerAddrByDNSLookup  bool          `key:"fetchControllerAddrByDnsLookup"`
	SyncBrokerMetadataPeriod        time.Duration `key:"syncBrokerMetadataPeriod"`
	CheckSyncStateSetPeriod         time.Duration `key:"checkSyncStateSetPeriod"`
	SyncControllerMetadataPeriod    time.Duration `key:"syncControllerMetadataPeriod"`
	ControllerHeartBeatTimeoutMills time.Duration `key:"controllerHeartBeatTimeoutMills"`
	BrokerElectionPriority          int           `key:"brokerElectionPriority"`
	// MasterLeaseMillis is the master self-fencing lease of controller mode,
	// a key of ours (Apache has none): controllerHeartBeatTimeoutMills − 4000
	// by default, ≤ 0 disables.
	MasterLeaseMillis time.Duration `key:"masterLeaseMillis"`

	// Access control (5.x ACL 1.0 switch; ACL 2.0 keys are in AuthConfig).
	ACLEnable bool `key:"aclEnable" important:"true" effect:"none"`

	// Logging and metrics.
	IsolateLogEnable                     bool          `key:"isolateLogEnable" effect:"none"`
	MetricsExporterType                  string        `key:"metricsExporterType"`
	MetricsOtelCardinalityLimit          int           `key:"metricsOtelCardinalityLimit"`
	MetricsGrpcExporterTarget            string        `key:"metricsGrpcExporterTarget"`
	MetricsGrpcExporterHeader            string        `key:"metricsGrpcExporterHeader"`
	MetricGrpcExporterTimeOutInMills     time.Duration `key:"metricGrpcExporterTimeOutInMills"`
	MetricGrpcExporterIntervalInMills    time.Duration `key:"metricGrpcExporterIntervalInMills"`
	MetricLoggingExporterIntervalInMills time.Duration `key:"metricLoggingExporterIntervalInMills"`
	MetricsPromExporterPort              int           `key:"metricsPromExporterPort"`
	MetricsPromExporterHost              string        `key:"metricsPromExporterHost"`
	MetricsLabel                         string        `key:"metricsLabel"`
	MetricsInDelta                       bool          `key:"metricsInDelta"`
	EnableRemotingMetrics                bool          `key:"enableRemotingMetrics"`
	EnableMessageStoreMetrics            bool          `key:"enableMessageStoreMetrics"`
	EnablePopMetrics                     bool          `key:"enablePopMetrics"`
	EnableConnectionMetrics              bool          `key:"enableConnectionMetrics"`
	EnableTransactionMetrics             bool          `key:"enableTransactionMetrics"`
	EnableStatsMetrics                   bool          `key:"enableStatsMetrics"`
	EnableRequestMetrics                 bool          `key:"enableRequestMetrics"`
	EnableLagAndDlqMetrics               bool          `key:"enableLagAndDlqMetrics"`
	MaxStatsIdleTimeInMinutes            int           `key:"maxStatsIdleTimeInMinutes" effect:"none"`

	// Cold data flow control.
	ColdCtrStrategyEnable   bool  `key:"coldCtrStrategyEnable" effect:"none"`
	UsePIDColdCtrStrategy   bool  `key:"usePIDColdCtrStrategy" effect:"none"`
	CgColdReadThreshold     int64 `key:"cgColdReadThreshold" effect:"none"`
	GlobalColdReadThreshold int64 `key:"globalColdReadThreshold" effect:"none"`

	EnableFastChannelEventProcess bool `key:"enableFastChannelEventProcess" effect:"none"`
	PrintChannelGroups            bool `key:"printChannelGroups" effect:"none"`
	PrintChannelGroupsMinNum      int  `key:"printChannelGroupsMinNum" effect:"none"`
}

// NettyConfig holds Apache's NettyServerConfig and NettyClientConfig keys.
// The Go remoting layer maps the ones that have an equivalent.
type NettyConfig struct {
	ListenPort                         int    `key:"listenPort" important:"true" readonly:"true"`
	BindAddress                        string `key:"bindAddress" readonly:"true"`
	ServerWorkerThreads                int    `key:"serverWorkerThreads" effect:"none"`
	ServerCallbackExecutorThreads      int    `key:"serverCallbackExecutorThreads" effect:"none"`
	ServerSelectorThreads              int    `key:"serverSelectorThreads" effect:"none"`
	ServerOnewaySemaphoreValue         int    `key:"serverOnewaySemaphoreValue" effect:"none"`
	ServerAsyncSemaphoreValue          int    `key:"serverAsyncSemaphoreValue" effect:"none"`
	ServerChannelMaxIdleTimeSeconds    int    `key:"serverChannelMaxIdleTimeSeconds"`
	ServerSocketSndBufSize             int    `key:"serverSocketSndBufSize" effect:"none"`
	ServerSocketRcvBufSize             int    `key:"serverSocketRcvBufSize" effect:"none"`
	WriteBufferHighWaterMark           int    `key:"writeBufferHighWaterMark" effect:"none"`
	WriteBufferLowWaterMark            int    `key:"writeBufferLowWaterMark" effect:"none"`
	ServerSocketBacklog                int    `key:"serverSocketBacklog" effect:"none"`
	ServerPooledByteBufAllocatorEnable bool   `key:"serverPooledByteBufAllocatorEnable" effect:"none"`
	EnableShutdownGracefully           bool   `key:"enableShutdownGracefully" effect:"none"`
	ShutdownWaitTimeSeconds            int    `key:"shutdownWaitTimeSeconds" effect:"none"`
	UseEpollNativeSelector             bool   `key:"useEpollNativeSelector" effect:"none"`
	UseTLS                             bool   `key:"useTLS" readonly:"true"`
	// FrameMaxLength is Java's com.rocketmq.remoting.frameMaxLength.
	FrameMaxLength int `key:"frameMaxLength"`

	ClientWorkerThreads                int           `key:"clientWorkerThreads" effect:"none"`
	ClientCallbackExecutorThreads      int           `key:"clientCallbackExecutorThreads" effect:"none"`
	ClientOnewaySemaphoreValue         int           `key:"clientOnewaySemaphoreValue" effect:"none"`
	ClientAsyncSemaphoreValue          int           `key:"clientAsyncSemaphoreValue" effect:"none"`
	ConnectTimeoutMillis               time.Duration `key:"connectTimeoutMillis"`
	ChannelNotActiveInterval           time.Duration `key:"channelNotActiveInterval" effect:"none"`
	ClientChannelMaxIdleTimeSeconds    int           `key:"clientChannelMaxIdleTimeSeconds" effect:"none"`
	ClientSocketSndBufSize             int           `key:"clientSocketSndBufSize" effect:"none"`
	ClientSocketRcvBufSize             int           `key:"clientSocketRcvBufSize" effect:"none"`
	ClientPooledByteBufAllocatorEnable bool          `key:"clientPooledByteBufAllocatorEnable" effect:"none"`
	ClientCloseSocketIfTimeout         bool          `key:"clientCloseSocketIfTimeout" effect:"none"`
	DisableCallbackExecutor            bool          `key:"disableCallbackExecutor" effect:"none"`
	DisableNettyWorkerGroup            bool          `key:"disableNettyWorkerGroup" effect:"none"`
}

// AuthConfig holds the ACL 2.0 keys (5.3+) a broker.conf may carry
// (docs/auth.md). As in Apache, where they live in an AuthConfig outside the
// broker's runtime Configuration, they cannot change while the broker runs
// and GET_BROKER_CONFIG does not show them (initAuthenticationUser and
// innerClientAuthenticationCredentials hold secrets).
type AuthConfig struct {
	AuthenticationEnabled                bool   `key:"authenticationEnabled" readonly:"true" hidden:"true"`
	AuthenticationProvider               string `key:"authenticationProvider" readonly:"true" hidden:"true" effect:"none"`
	AuthenticationMetadataProvider       string `key:"authenticationMetadataProvider" readonly:"true" hidden:"true" effect:"none"`
	AuthenticationStrategy               string `key:"authenticationStrategy" readonly:"true" hidden:"true" effect:"none"`
	AuthenticationWhitelist              string `key:"authenticationWhitelist" readonly:"true" hidden:"true"`
	InitAuthenticationUser               string `key:"initAuthenticationUser" readonly:"true" hidden:"true"`
	InnerClientAuthenticationCredentials string `key:"innerClientAuthenticationCredentials" readonly:"true" hidden:"true"`
	AuthorizationEnabled                 bool   `key:"authorizationEnabled" readonly:"true" hidden:"true"`
	AuthorizationProvider                string `key:"authorizationProvider" readonly:"true" hidden:"true" effect:"none"`
	AuthorizationMetadataProvider        string `key:"authorizationMetadataProvider" readonly:"true" hidden:"true" effect:"none"`
	AuthorizationStrategy                string `key:"authorizationStrategy" readonly:"true" hidden:"true" effect:"none"`
	AuthorizationWhitelist               string `key:"authorizationWhitelist" readonly:"true" hidden:"true"`
	MigrateAuthFromV1Enabled             bool   `key:"migrateAuthFromV1Enabled" readonly:"true" hidden:"true"`
	UserCacheMaxNum                      int    `key:"userCacheMaxNum" readonly:"true" hidden:"true" effect:"none"`
	UserCacheExpiredSecond               int    `key:"userCacheExpiredSecond" readonly:"true" hidden:"true" effect:"none"`
	UserCacheRefreshSecond               int    `key:"userCacheRefreshSecond" readonly:"true" hidden:"true" effect:"none"`
	AclCacheMaxNum                       int    `key:"aclCacheMaxNum" readonly:"true" hidden:"true" effect:"none"`
	AclCacheExpiredSecond                int    `key:"aclCacheExpiredSecond" readonly:"true" hidden:"true" effect:"none"`
	AclCacheRefreshSecond                int    `key:"aclCacheRefreshSecond" readonly:"true" hidden:"true" effect:"none"`
}

// defaultBrokerConfig mirrors Java's field initialisers; hostname and ip are
// what the local host reports (Java: InetAddress.getLocalHost().getHostName()
// and NetworkUtil.getLocalAddress()).
func defaultBrokerConfig(hostname, ip string, env map[string]string) BrokerConfig {
	cpus := runtime.NumCPU()
	send := min(cpus, 4)
	name := hostname
	if name == "" {
		name = "DEFAULT_BROKER"
	}
	home := env["ROCKETMQ_HOME"]
	ms := time.Millisecond
	return BrokerConfig{
		BrokerName:                         name,
		GrpcServerPort:                     8081,
		BrokerClusterName:                  "DefaultCluster",
		BrokerID:                           0,
		RocketmqHome:                       home,
		NamesrvAddr:                        env["NAMESRV_ADDR"],
		BrokerIP1:                          ip,
		BrokerIP2:                          ip,
		RegionID:                           "DefaultRegion",
		BrokerPermission:                   6,
		DefaultTopicQueueNums:              8,
		AutoCreateTopicEnable:              true,
		ClusterTopicEnable:                 true,
		BrokerTopicEnable:                  true,
		AutoCreateSubscriptionGroup:        true,
		MsgTraceTopicName:                  "RMQ_SYS_TRACE_TOPIC",
		TraceOn:                            true,
		ValidateSystemTopicWhenUpdateTopic: true,
		ClearRetryTopicWhenDeleteTopic:     true,
		ConfigBlackList:                    "configBlackList;brokerConfigPath",

		// gRPC consumers (the proxy's defaults).
		GrpcStreamWorkers: 128,
		GrpcClientConsumerMinLongPollingTimeoutMillis: 5000,
		GrpcClientConsumerMaxLongPollingTimeoutMillis: 20000,
		GrpcClientConsumerLongPollingBatchSize:        32,
		MinInvisibleTimeMillsForRecv:                  10000,
		MaxInvisibleTimeMills:                         12 * 3600 * 1000,
		RenewSliceTimeMillis:                          60000,
		RenewAheadTimeMillis:                          10000,
		RenewMaxTimeMillis:                            3 * 3600 * 1000,

		TimerSlackMicros:                   250,
		SendMessageThreadPoolNums:          send,
		PutMessageFutureThreadPoolNums:     send,
		PullMessageThreadPoolNums:          16 + cpus*2,
		LitePullMessageThreadPoolNums:      16 + cpus*2,
		AckMessageThreadPoolNums:           16,
		ProcessReplyMessageThreadPoolNums:  16 + cpus*2,
		QueryMessageThreadPoolNums:         8 + cpus,
		AdminBrokerThreadPoolNums:          16,
		ClientManageThreadPoolNums:         32,
		ConsumerManageThreadPoolNums:       32,
		LoadBalanceProcessorThreadPoolNums: 32,
		HeartbeatThreadPoolNums:            min(32, cpus),
		RecoverThreadPoolNums:              32,
		EndTransactionThreadPoolNums:       max(8+cpus*2, send*4),

		SendThreadPoolQueueCapacity:            10000,
		PutThreadPoolQueueCapacity:             10000,
		PullThreadPoolQueueCapacity:            100000,
		LitePullThreadPoolQueueCapacity:        100000,
		AckThreadPoolQueueCapacity:             100000,
		ReplyThreadPoolQueueCapacity:           10000,
		QueryThreadPoolQueueCapacity:           20000,
		ClientManagerThreadPoolQueueCapacity:   1000000,
		ConsumerManagerThreadPoolQueueCapacity: 1000000,
		HeartbeatThreadPoolQueueCapacity:       50000,
		EndTransactionPoolQueueCapacity:        100000,
		AdminBrokerThreadPoolQueueCapacity:     10000,
		LoadBalanceThreadPoolQueueCapacity:     100000,

		BrokerFastFailureEnable:         true,
		WaitTimeMillsInSendQueue:        200 * ms,
		WaitTimeMillsInPullQueue:        5000 * ms,
		WaitTimeMillsInLitePullQueue:    5000 * ms,
		WaitTimeMillsInHeartbeatQueue:   31000 * ms,
		WaitTimeMillsInTransactionQueue: 3000 * ms,
		WaitTimeMillsInAckQueue:         3000 * ms,
		WaitTimeMillsInAdminBrokerQueue: 5000 * ms,

		FlushConsumerOffsetInterval:        5000 * ms,
		FlushConsumerOffsetHistoryInterval: 60000 * ms,
		NotifyConsumerIdsChangedEnable:     true,
		ChannelExpiredTimeout:              120000 * ms,
		SubscriptionExpiredTimeout:         600000 * ms,
		EnableBroadcastOffsetStore:         true,
		BroadcastOffsetExpireSecond:        120,
		BroadcastOffsetExpireMaxSecond:     300,
		UseServerSideResetOffset:           true,
		ConsumerOffsetUpdateVersionStep:    500,
		DelayOffsetUpdateVersionStep:       200,
		EnableRegisterProducer:             true,
		EnableCreateSysGroup:               true,

		MaxDelayMessageSize:       64 << 10,
		MaxTransactionMessageSize: 64 << 10,

		LongPollingEnable:           true,
		ShortPollingTimeMills:       1000 * ms,
		SlaveSyncCheckInterval:      3000 * ms,
		SlaveSyncFullInterval:       60000 * ms,
		VipChannelListenEnable:      true,
		TransferMsgByHeap:           true,
		ConsumerFallbehindThreshold: 16 << 30,
		LitePullMessageEnable:       true,
		ExpectConsumerNumUseFilter:  32,
		MaxErrorRateOfBloomFilter:   20,
		FilterDataCleanTimeSpan:     24 * time.Hour,
		CommercialBaseCount:         1,
		CommercialSizePerMsg:        4 * 1024,
		AccountStatsEnable:          true,
		AccountStatsPrintZeroValues: true,
		EnableDetailStat:            true,
		AutoDeleteUnusedStats:       true,
		EstimateAccumulation:        true,
		MaxStatsIdleTimeInMinutes:   -1,

		RegisterBrokerTimeoutMills:   24000 * ms,
		RegisterNameServerPeriod:     30000 * ms,
		UpdateNameServerAddrPeriod:   120000 * ms,
		FetchNamesrvAddrInterval:     10000 * ms,
		ForceRegister:                true,
		SplitRegistrationSize:        800,
		EnableSplitMetadata:          true,
		SplitMetadataSize:            2000,
		SendHeartbeatTimeoutMillis:   1000 * ms,
		BrokerHeartbeatInterval:      1000 * ms,
		BrokerNotActiveTimeoutMillis: 10000 * ms,
		CompatibleWithOldNameSrv:     true,
		SyncBrokerMemberGroupPeriod:  1000 * ms,

		TransactionTimeOut:             6000 * ms,
		TransactionCheckMax:            15,
		TransactionCheckInterval:       30000 * ms,
		TransactionMetricFlushInterval: 10000 * ms,
		TransactionOpMsgMaxSize:        4096,
		TransactionOpBatchInterval:     3000 * ms,

		StoreReplyMessageEnable:           true,
		AllowRecallWhenBrokerNotWriteable: true,
		ForwardTimeout:                    3000 * ms,
		AsyncSendEnable:                   true,

		PopPollingSize:                       1024,
		PopPollingMapSize:                    100000,
		PopPollingMapExpireTimeSeconds:       600,
		MaxPopPollingSize:                    100000,
		ReviveQueueNum:                       8,
		ReviveInterval:                       1000 * ms,
		ReviveMaxSlow:                        3,
		ReviveScanTime:                       10000 * ms,
		PopCkStayBufferTime:                  10000 * ms,
		PopCkStayBufferTimeOut:               3000 * ms,
		PopCkMaxBufferSize:                   200000,
		PopCkOffsetMaxQueueSize:              20000,
		PopLongPollingForceNotifyInterval:    800 * ms,
		EnableNotifyBeforePopCalculateLag:    true,
		EnableNotifyAfterPopOrderLockRelease: true,
		InitPopOffsetByCheckMsgInMem:         true,
		RetrieveMessageFromPopRetryTopicV1:   true,
		PopFromRetryProbability:              20,
		PopInflightMessageThreshold:          10000,
		RealTimeNotifyConsumerChange:         true,
		ServerLoadBalancerEnable:             true,
		DefaultMessageRequestMode:            "PULL",
		DefaultPopShareQueueNum:              -1,
		LoadBalancePollNameServerInterval:    30000 * ms,
		CleanOfflineBrokerInterval:           30000 * ms,
		PopOrderLockTimerTickMs:              100 * ms,
		PopOrderLockTimerTicksPerWheel:       512,

		LiteEventCheckInterval:                         10000 * ms,
		LiteTTLCheckInterval:                           120000 * ms,
		LiteSweepWorkMs:                                2 * ms,
		LiteSweepRestMs:                                0,
		MinLiteTTL:                                     900000 * ms,
		LiteSubscriptionCheckInterval:                  2 * time.Minute,
		LiteSubscriptionCheckTimeoutMills:              3 * time.Minute,
		MaxLiteSubscriptionCount:                       100000,
		MaxClientEventCount:                            100,
		LiteEventCapacityCacheTTLMs:                    5000 * ms,
		LiteEventFullDispatchDelayTime:                 10000 * ms,
		LiteEventFullDispatchDelayTimeForWildcardGroup: 10000 * ms,
		LiteLagLatencyTopK:                             50,
		MaxLiteTopicSize:                               64,
		MaxSyncLiteSubscriptionRate:                    5000,

		SyncBrokerMetadataPeriod:        5000 * ms,
		CheckSyncStateSetPeriod:         5000 * ms,
		SyncControllerMetadataPeriod:    10000 * ms,
		ControllerHeartBeatTimeoutMills: 10000 * ms,
		BrokerElectionPriority:          2147483647,
		MasterLeaseMillis:               6000 * ms,

		MetricsExporterType:                  "DISABLE",
		MetricsOtelCardinalityLimit:          50000,
		MetricGrpcExporterTimeOutInMills:     3000 * ms,
		MetricGrpcExporterIntervalInMills:    60000 * ms,
		MetricLoggingExporterIntervalInMills: 10000 * ms,
		MetricsPromExporterPort:              5557,
		EnableRemotingMetrics:                true,
		EnableMessageStoreMetrics:            true,
		EnablePopMetrics:                     true,
		EnableConnectionMetrics:              true,
		EnableTransactionMetrics:             true,
		EnableStatsMetrics:                   true,
		EnableRequestMetrics:                 true,
		EnableLagAndDlqMetrics:               true,

		UsePIDColdCtrStrategy:    true,
		CgColdReadThreshold:      3 << 20,
		GlobalColdReadThreshold:  100 << 20,
		PrintChannelGroupsMinNum: 5,
	}
}

func defaultNettyConfig() NettyConfig {
	ms := time.Millisecond
	return NettyConfig{
		ListenPort:                         10911,
		BindAddress:                        "0.0.0.0",
		ServerWorkerThreads:                8,
		ServerSelectorThreads:              3,
		ServerOnewaySemaphoreValue:         256,
		ServerAsyncSemaphoreValue:          64,
		ServerChannelMaxIdleTimeSeconds:    120,
		ServerSocketBacklog:                1024,
		ServerPooledByteBufAllocatorEnable: true,
		ShutdownWaitTimeSeconds:            30,
		FrameMaxLength:                     16 << 20,
		ClientWorkerThreads:                4,
		ClientCallbackExecutorThreads:      runtime.NumCPU(),
		ClientOnewaySemaphoreValue:         65535,
		ClientAsyncSemaphoreValue:          65535,
		ConnectTimeoutMillis:               3000 * ms,
		ChannelNotActiveInterval:           60000 * ms,
		ClientChannelMaxIdleTimeSeconds:    120,
		ClientCloseSocketIfTimeout:         true,
	}
}

func defaultAuthConfig() AuthConfig {
	return AuthConfig{
		UserCacheMaxNum:        1000,
		UserCacheExpiredSecond: 600,
		UserCacheRefreshSecond: 60,
		AclCacheMaxNum:         1000,
		AclCacheExpiredSecond:  600,
		AclCacheRefreshSecond:  60,
	}
}
