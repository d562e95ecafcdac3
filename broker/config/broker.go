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
// broker reads them, so that a broker.conf written for Java loads unchanged.
type BrokerConfig struct {
	// Identity.
	BrokerName        string `key:"brokerName" important:"true" readonly:"true"`
	BrokerClusterName string `key:"brokerClusterName" important:"true" readonly:"true"`
	BrokerID          int64  `key:"brokerId" important:"true" readonly:"true"`

	BrokerConfigPath string `key:"brokerConfigPath" readonly:"true"`
	RocketmqHome     string `key:"rocketmqHome" readonly:"true"`
	NamesrvAddr      string `key:"namesrvAddr" important:"true"`
	BrokerIP1        string `key:"brokerIP1" important:"true" readonly:"true"`
	BrokerIP2        string `key:"brokerIP2" important:"true" readonly:"true"`
	RegionID         string `key:"regionId"`

	RecoverConcurrently                bool   `key:"recoverConcurrently" important:"true"`
	BrokerPermission                   int    `key:"brokerPermission" important:"true"`
	DefaultTopicQueueNums              int    `key:"defaultTopicQueueNums"`
	AutoCreateTopicEnable              bool   `key:"autoCreateTopicEnable" important:"true"`
	ClusterTopicEnable                 bool   `key:"clusterTopicEnable" important:"true"`
	BrokerTopicEnable                  bool   `key:"brokerTopicEnable"`
	AutoCreateSubscriptionGroup        bool   `key:"autoCreateSubscriptionGroup" important:"true"`
	MessageStorePlugIn                 string `key:"messageStorePlugIn" important:"true"`
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

	// Thread pools (worker counts and queue capacities of the executors).
	SendMessageThreadPoolNums          int `key:"sendMessageThreadPoolNums"`
	PutMessageFutureThreadPoolNums     int `key:"putMessageFutureThreadPoolNums"`
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
	RecoverThreadPoolNums              int `key:"recoverThreadPoolNums"`
	EndTransactionThreadPoolNums       int `key:"endTransactionThreadPoolNums"`

	SendThreadPoolQueueCapacity            int `key:"sendThreadPoolQueueCapacity" important:"true"`
	PutThreadPoolQueueCapacity             int `key:"putThreadPoolQueueCapacity"`
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
	FlushConsumerOffsetHistoryInterval time.Duration `key:"flushConsumerOffsetHistoryInterval"`
	NotifyConsumerIdsChangedEnable     bool          `key:"notifyConsumerIdsChangedEnable"`
	ChannelExpiredTimeout              time.Duration `key:"channelExpiredTimeout"`
	SubscriptionExpiredTimeout         time.Duration `key:"subscriptionExpiredTimeout"`
	EnableBroadcastOffsetStore         bool          `key:"enableBroadcastOffsetStore"`
	BroadcastOffsetExpireSecond        int64         `key:"broadcastOffsetExpireSecond"`
	BroadcastOffsetExpireMaxSecond     int64         `key:"broadcastOffsetExpireMaxSecond"`
	UseServerSideResetOffset           bool          `key:"useServerSideResetOffset"`
	ConsumerOffsetUpdateVersionStep    int64         `key:"consumerOffsetUpdateVersionStep"`
	DelayOffsetUpdateVersionStep       int64         `key:"delayOffsetUpdateVersionStep"`
	LockInStrictMode                   bool          `key:"lockInStrictMode"`
	EnableRegisterProducer             bool          `key:"enableRegisterProducer"`
	EnableCreateSysGroup               bool          `key:"enableCreateSysGroup"`
	UseStaticSubscription              bool          `key:"useStaticSubscription"`

	// Pull.
	LongPollingEnable     bool          `key:"longPollingEnable"`
	ShortPollingTimeMills time.Duration `key:"shortPollingTimeMills"`
	TransferMsgByHeap     bool          `key:"transferMsgByHeap"`
	SlaveReadEnable       bool          `key:"slaveReadEnable"`
	// SlaveSyncCheckInterval / SlaveSyncFullInterval [ours]: a classic
	// SLAVE checks every CheckInterval and copies its master's metadata
	// once FullInterval passed since the last copy (Apache's fixed 3 s and
	// 60 s; broker/slavesync).
	SlaveSyncCheckInterval             time.Duration `key:"slaveSyncCheckInterval"`
	SlaveSyncFullInterval              time.Duration `key:"slaveSyncFullInterval"`
	DisableConsumeIfConsumerReadSlowly bool          `key:"disableConsumeIfConsumerReadSlowly"`
	ConsumerFallbehindThreshold        int64         `key:"consumerFallbehindThreshold"`
	LitePullMessageEnable              bool          `key:"litePullMessageEnable"`
	EnableCalcFilterBitMap             bool          `key:"enableCalcFilterBitMap"`
	RejectPullConsumerEnable           bool          `key:"rejectPullConsumerEnable"`
	ExpectConsumerNumUseFilter         int           `key:"expectConsumerNumUseFilter"`
	MaxErrorRateOfBloomFilter          int           `key:"maxErrorRateOfBloomFilter"`
	FilterDataCleanTimeSpan            time.Duration `key:"filterDataCleanTimeSpan"`
	FilterSupportRetry                 bool          `key:"filterSupportRetry"`
	EnablePropertyFilter               bool          `key:"enablePropertyFilter"`
	EnableNetWorkFlowControl           bool          `key:"enableNetWorkFlowControl"`
	HighSpeedMode                      bool          `key:"highSpeedMode"`
	CommercialBaseCount                int           `key:"commercialBaseCount"`
	CommercialSizePerMsg               int           `key:"commercialSizePerMsg"`
	AccountStatsEnable                 bool          `key:"accountStatsEnable"`
	AccountStatsPrintZeroValues        bool          `key:"accountStatsPrintZeroValues"`
	EnableDetailStat                   bool          `key:"enableDetailStat"`
	AutoDeleteUnusedStats              bool          `key:"autoDeleteUnusedStats"`
	EnableLmqStats                     bool          `key:"enableLmqStats"`
	EstimateAccumulation               bool          `key:"estimateAccumulation"`

	// Nameserver registration.
	RegisterBrokerTimeoutMills      time.Duration `key:"registerBrokerTimeoutMills"`
	RegisterNameServerPeriod        time.Duration `key:"registerNameServerPeriod"`
	UpdateNameServerAddrPeriod      time.Duration `key:"updateNameServerAddrPeriod"`
	FetchNamesrvAddrInterval        time.Duration `key:"fetchNamesrvAddrInterval"`
	ForceRegister                   bool          `key:"forceRegister"`
	CompressedRegister              bool          `key:"compressedRegister"`
	EnableSingleTopicRegister       bool          `key:"enableSingleTopicRegister"`
	EnableSplitRegistration         bool          `key:"enableSplitRegistration"`
	SplitRegistrationSize           int           `key:"splitRegistrationSize"`
	EnableSplitMetadata             bool          `key:"enableSplitMetadata"`
	SplitMetadataSize               int           `key:"splitMetadataSize"`
	FetchNameSrvAddrByDNSLookup     bool          `key:"fetchNameSrvAddrByDnsLookup" important:"true"`
	FetchNamesrvAddrByAddressServer bool          `key:"fetchNamesrvAddrByAddressServer" important:"true"`
	SendHeartbeatTimeoutMillis      time.Duration `key:"sendHeartbeatTimeoutMillis"`
	BrokerHeartbeatInterval         time.Duration `key:"brokerHeartbeatInterval"`
	BrokerNotActiveTimeoutMillis    time.Duration `key:"brokerNotActiveTimeoutMillis"`
	CompatibleWithOldNameSrv        bool          `key:"compatibleWithOldNameSrv"`
	SyncBrokerMemberGroupPeriod     time.Duration `key:"syncBrokerMemberGroupPeriod"`

	// Transactions.
	RejectTransactionMessage       bool          `key:"rejectTransactionMessage" important:"true"`
	TransactionTimeOut             time.Duration `key:"transactionTimeOut" important:"true"`
	TransactionCheckMax            int           `key:"transactionCheckMax" important:"true"`
	TransactionCheckInterval       time.Duration `key:"transactionCheckInterval" important:"true"`
	TransactionMetricFlushInterval time.Duration `key:"transactionMetricFlushInterval" important:"true"`
	TransactionOpMsgMaxSize        int           `key:"transactionOpMsgMaxSize"`
	TransactionOpBatchInterval     time.Duration `key:"transactionOpBatchInterval"`

	// Request/reply, recall, forwarding.
	StoreReplyMessageEnable           bool          `key:"storeReplyMessageEnable" important:"true"`
	AllowRecallWhenBrokerNotWriteable bool          `key:"allowRecallWhenBrokerNotWriteable"`
	RecallMessageEnable               bool          `key:"recallMessageEnable"`
	ForwardTimeout                    time.Duration `key:"forwardTimeout"`
	AsyncSendEnable                   bool          `key:"asyncSendEnable"`

	// POP consumption.
	PopPollingSize                       int           `key:"popPollingSize"`
	PopPollingMapSize                    int           `key:"popPollingMapSize"`
	PopPollingMapExpireTimeSeconds       int           `key:"popPollingMapExpireTimeSeconds"`
	MaxPopPollingSize                    int64         `key:"maxPopPollingSize"`
	ReviveQueueNum                       int           `key:"reviveQueueNum"`
	ReviveInterval                       time.Duration `key:"reviveInterval"`
	ReviveMaxSlow                        int64         `key:"reviveMaxSlow"`
	ReviveScanTime                       time.Duration `key:"reviveScanTime"`
	EnableSkipLongAwaitingAck            bool          `key:"enableSkipLongAwaitingAck"`
	EnablePopLog                         bool          `key:"enablePopLog"`
	EnablePopBufferMerge                 bool          `key:"enablePopBufferMerge"`
	PopCkStayBufferTime                  time.Duration `key:"popCkStayBufferTime"`
	PopCkStayBufferTimeOut               time.Duration `key:"popCkStayBufferTimeOut"`
	PopCkMaxBufferSize                   int           `key:"popCkMaxBufferSize"`
	PopCkOffsetMaxQueueSize              int           `key:"popCkOffsetMaxQueueSize"`
	EnablePopBatchAck                    bool          `key:"enablePopBatchAck"`
	PopLongPollingForceNotifyInterval    time.Duration `key:"popLongPollingForceNotifyInterval"`
	EnableNotifyBeforePopCalculateLag    bool          `key:"enableNotifyBeforePopCalculateLag"`
	EnableNotifyAfterPopOrderLockRelease bool          `key:"enableNotifyAfterPopOrderLockRelease"`
	InitPopOffsetByCheckMsgInMem         bool          `key:"initPopOffsetByCheckMsgInMem"`
	RetrieveMessageFromPopRetryTopicV1   bool          `key:"retrieveMessageFromPopRetryTopicV1"`
	EnableRetryTopicV2                   bool          `key:"enableRetryTopicV2"`
	PopFromRetryProbability              int           `key:"popFromRetryProbability"`
	PopResponseReturnActualRetryTopic    bool          `key:"popResponseReturnActualRetryTopic"`
	PopInflightMessageThreshold          int64         `key:"popInflightMessageThreshold"`
	EnablePopMessageThreshold            bool          `key:"enablePopMessageThreshold"`
	SkipWhenCKRePutReachMaxTimes         bool          `key:"skipWhenCKRePutReachMaxTimes"`
	AppendAckAsync                       bool          `key:"appendAckAsync"`
	AppendCkAsync                        bool          `key:"appendCkAsync"`
	RealTimeNotifyConsumerChange         bool          `key:"realTimeNotifyConsumerChange"`
	ServerLoadBalancerEnable             bool          `key:"serverLoadBalancerEnable"`
	DefaultMessageRequestMode            string        `key:"defaultMessageRequestMode"`
	DefaultPopShareQueueNum              int           `key:"defaultPopShareQueueNum"`
	LoadBalancePollNameServerInterval    time.Duration `key:"loadBalancePollNameServerInterval"`
	CleanOfflineBrokerInterval           time.Duration `key:"cleanOfflineBrokerInterval"`
	PopOrderLockTimerTickMs              time.Duration `key:"popOrderLockTimerTickMs"`
	PopOrderLockTimerTicksPerWheel       int           `key:"popOrderLockTimerTicksPerWheel"`

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
	PersistConsumerOffsetIncrementally             bool          `key:"persistConsumerOffsetIncrementally"`
	EnableLitePopLog                               bool          `key:"enableLitePopLog"`
	LiteLagLatencyCollectEnable                    bool          `key:"liteLagLatencyCollectEnable"` // no effect yet (no lite lag metrics; docs/compatibility.md)
	LiteLagLatencyMetricsEnable                    bool          `key:"liteLagLatencyMetricsEnable"` // no effect yet (no lite lag metrics; docs/compatibility.md)
	LiteLagCountMetricsEnable                      bool          `key:"liteLagCountMetricsEnable"`   // no effect yet (no lite lag metrics; docs/compatibility.md)
	LiteLagLatencyTopK                             int           `key:"liteLagLatencyTopK"`          // no effect yet (no lite lag metrics; docs/compatibility.md)
	MaxLiteTopicSize                               int           `key:"maxLiteTopicSize"`
	MaxSyncLiteSubscriptionRate                    int           `key:"maxSyncLiteSubscriptionRate"`

	// Replication, controller mode (Apache's
	// org/apache/rocketmq/common/BrokerConfig.java keys).
	EnableSlaveActingMaster         bool          `key:"enableSlaveActingMaster"`
	EnableRemoteEscape              bool          `key:"enableRemoteEscape"`
	SkipPreOnline                   bool          `key:"skipPreOnline"`
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
	ACLEnable bool `key:"aclEnable" important:"true"`

	// Logging and metrics.
	IsolateLogEnable                     bool          `key:"isolateLogEnable"`
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
	MaxStatsIdleTimeInMinutes            int           `key:"maxStatsIdleTimeInMinutes"`

	// Cold data flow control.
	ColdCtrStrategyEnable   bool  `key:"coldCtrStrategyEnable"`
	UsePIDColdCtrStrategy   bool  `key:"usePIDColdCtrStrategy"`
	CgColdReadThreshold     int64 `key:"cgColdReadThreshold"`
	GlobalColdReadThreshold int64 `key:"globalColdReadThreshold"`

	EnableFastChannelEventProcess bool `key:"enableFastChannelEventProcess"`
	PrintChannelGroups            bool `key:"printChannelGroups"`
	PrintChannelGroupsMinNum      int  `key:"printChannelGroupsMinNum"`
}

// NettyConfig holds Apache's NettyServerConfig and NettyClientConfig keys.
// The Go remoting layer maps the ones that have an equivalent.
type NettyConfig struct {
	ListenPort                         int    `key:"listenPort" important:"true" readonly:"true"`
	BindAddress                        string `key:"bindAddress" readonly:"true"`
	ServerWorkerThreads                int    `key:"serverWorkerThreads"`
	ServerCallbackExecutorThreads      int    `key:"serverCallbackExecutorThreads"`
	ServerSelectorThreads              int    `key:"serverSelectorThreads"`
	ServerOnewaySemaphoreValue         int    `key:"serverOnewaySemaphoreValue"`
	ServerAsyncSemaphoreValue          int    `key:"serverAsyncSemaphoreValue"`
	ServerChannelMaxIdleTimeSeconds    int    `key:"serverChannelMaxIdleTimeSeconds"`
	ServerSocketSndBufSize             int    `key:"serverSocketSndBufSize"`
	ServerSocketRcvBufSize             int    `key:"serverSocketRcvBufSize"`
	WriteBufferHighWaterMark           int    `key:"writeBufferHighWaterMark"`
	WriteBufferLowWaterMark            int    `key:"writeBufferLowWaterMark"`
	ServerSocketBacklog                int    `key:"serverSocketBacklog"`
	ServerPooledByteBufAllocatorEnable bool   `key:"serverPooledByteBufAllocatorEnable"`
	EnableShutdownGracefully           bool   `key:"enableShutdownGracefully"`
	ShutdownWaitTimeSeconds            int    `key:"shutdownWaitTimeSeconds"`
	UseEpollNativeSelector             bool   `key:"useEpollNativeSelector"`
	UseTLS                             bool   `key:"useTLS" readonly:"true"`
	// FrameMaxLength is Java's com.rocketmq.remoting.frameMaxLength.
	FrameMaxLength int `key:"frameMaxLength"`

	ClientWorkerThreads                int           `key:"clientWorkerThreads"`
	ClientCallbackExecutorThreads      int           `key:"clientCallbackExecutorThreads"`
	ClientOnewaySemaphoreValue         int           `key:"clientOnewaySemaphoreValue"`
	ClientAsyncSemaphoreValue          int           `key:"clientAsyncSemaphoreValue"`
	ConnectTimeoutMillis               time.Duration `key:"connectTimeoutMillis"`
	ChannelNotActiveInterval           time.Duration `key:"channelNotActiveInterval"`
	ClientChannelMaxIdleTimeSeconds    int           `key:"clientChannelMaxIdleTimeSeconds"`
	ClientSocketSndBufSize             int           `key:"clientSocketSndBufSize"`
	ClientSocketRcvBufSize             int           `key:"clientSocketRcvBufSize"`
	ClientPooledByteBufAllocatorEnable bool          `key:"clientPooledByteBufAllocatorEnable"`
	ClientCloseSocketIfTimeout         bool          `key:"clientCloseSocketIfTimeout"`
	DisableCallbackExecutor            bool          `key:"disableCallbackExecutor"`
	DisableNettyWorkerGroup            bool          `key:"disableNettyWorkerGroup"`
}

// AuthConfig holds the ACL 2.0 keys (5.3+) a broker.conf may carry.
type AuthConfig struct {
	AuthenticationEnabled                bool   `key:"authenticationEnabled"`
	AuthenticationProvider               string `key:"authenticationProvider"`
	AuthenticationMetadataProvider       string `key:"authenticationMetadataProvider"`
	AuthenticationStrategy               string `key:"authenticationStrategy"`
	AuthenticationWhitelist              string `key:"authenticationWhitelist"`
	InitAuthenticationUser               string `key:"initAuthenticationUser"`
	InnerClientAuthenticationCredentials string `key:"innerClientAuthenticationCredentials"`
	AuthorizationEnabled                 bool   `key:"authorizationEnabled"`
	AuthorizationProvider                string `key:"authorizationProvider"`
	AuthorizationMetadataProvider        string `key:"authorizationMetadataProvider"`
	AuthorizationStrategy                string `key:"authorizationStrategy"`
	AuthorizationWhitelist               string `key:"authorizationWhitelist"`
	MigrateAuthFromV1Enabled             bool   `key:"migrateAuthFromV1Enabled"`
	UserCacheMaxNum                      int    `key:"userCacheMaxNum"`
	UserCacheExpiredSecond               int    `key:"userCacheExpiredSecond"`
	UserCacheRefreshSecond               int    `key:"userCacheRefreshSecond"`
	AclCacheMaxNum                       int    `key:"aclCacheMaxNum"`
	AclCacheExpiredSecond                int    `key:"aclCacheExpiredSecond"`
	AclCacheRefreshSecond                int    `key:"aclCacheRefreshSecond"`
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
		GrpcClientConsumerMinLongPollingTimeoutMillis: 5000,
		GrpcClientConsumerMaxLongPollingTimeoutMillis: 20000,
		GrpcClientConsumerLongPollingBatchSize:        32,
		MinInvisibleTimeMillsForRecv:                  10000,
		MaxInvisibleTimeMills:                         12 * 3600 * 1000,
		RenewSliceTimeMillis:                          60000,
		RenewAheadTimeMillis:                          10000,
		RenewMaxTimeMillis:                            3 * 3600 * 1000,

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
