package config

import (
	"path/filepath"
	"time"
)

// BrokerRole is the static replication role
// (org/apache/rocketmq/store/config/BrokerRole.java).
type BrokerRole = string

// Broker roles.
const (
	RoleAsyncMaster BrokerRole = "ASYNC_MASTER"
	RoleSyncMaster  BrokerRole = "SYNC_MASTER"
	RoleSlave       BrokerRole = "SLAVE"
)

// FlushDiskType selects synchronous or asynchronous commit-log flushing.
type FlushDiskType = string

// Flush types.
const (
	FlushAsync FlushDiskType = "ASYNC_FLUSH"
	FlushSync  FlushDiskType = "SYNC_FLUSH"
)

// MessageStoreConfig holds Apache's MessageStoreConfig keys. The message
// store (broker/store) reads them; paths left empty derive from
// StorePathRootDir as in Java.
type MessageStoreConfig struct {
	StorePathRootDir            string `key:"storePathRootDir" important:"true" readonly:"true"`
	StorePathCommitLog          string `key:"storePathCommitLog" important:"true" readonly:"true"`
	StorePathDLedgerCommitLog   string `key:"storePathDLedgerCommitLog" important:"true" readonly:"true" effect:"none"`
	StorePathEpochFile          string `key:"storePathEpochFile" important:"true" readonly:"true"`
	StorePathBrokerIdentity     string `key:"storePathBrokerIdentity" important:"true" readonly:"true"`
	ReadOnlyCommitLogStorePaths string `key:"readOnlyCommitLogStorePaths" important:"true" readonly:"true" effect:"none"`
	StoreType                   string `key:"storeType" important:"true" readonly:"true" effect:"none"`

	MappedFileSizeCommitLog         int  `key:"mappedFileSizeCommitLog" readonly:"true"`
	MappedFileSizeConsumeQueue      int  `key:"mappedFileSizeConsumeQueue" readonly:"true" effect:"none"`
	EnableConsumeQueueExt           bool `key:"enableConsumeQueueExt" effect:"none"`
	MappedFileSizeConsumeQueueExt   int  `key:"mappedFileSizeConsumeQueueExt" effect:"none"`
	MapperFileSizeBatchConsumeQueue int  `key:"mapperFileSizeBatchConsumeQueue" readonly:"true" effect:"none"`
	BitMapLengthConsumeQueueExt     int  `key:"bitMapLengthConsumeQueueExt" effect:"none"`

	// Compaction topics.
	CompactionMappedFileSize   int           `key:"compactionMappedFileSize" effect:"none"`
	CompactionCqMappedFileSize int           `key:"compactionCqMappedFileSize" effect:"none"`
	CompactionScheduleInternal time.Duration `key:"compactionScheduleInternal" effect:"none"`
	MaxOffsetMapSize           int           `key:"maxOffsetMapSize" effect:"none"`
	CompactionThreadNum        int           `key:"compactionThreadNum" effect:"none"`
	EnableCompaction           bool          `key:"enableCompaction" effect:"none"`

	// Timer messages.
	TimerWheelEnable             bool          `key:"timerWheelEnable" readonly:"true"`
	MappedFileSizeTimerLog       int           `key:"mappedFileSizeTimerLog" readonly:"true" effect:"none"`
	TimerPrecisionMs             time.Duration `key:"timerPrecisionMs"`
	TimerRollWindowSlot          int           `key:"timerRollWindowSlot"`
	TimerFlushIntervalMs         time.Duration `key:"timerFlushIntervalMs" effect:"none"`
	TimerGetMessageThreadNum     int           `key:"timerGetMessageThreadNum" effect:"none"`
	TimerPutMessageThreadNum     int           `key:"timerPutMessageThreadNum" effect:"none"`
	TimerEnableDisruptor         bool          `key:"timerEnableDisruptor" effect:"none"`
	TimerEnableCheckMetrics      bool          `key:"timerEnableCheckMetrics" effect:"none"`
	TimerInterceptDelayLevel     bool          `key:"timerInterceptDelayLevel" effect:"none"`
	TimerMaxDelaySec             int           `key:"timerMaxDelaySec"`
	DisappearTimeAfterStart      int           `key:"disappearTimeAfterStart" important:"true" effect:"none"`
	TimerStopEnqueue             bool          `key:"timerStopEnqueue" important:"true" effect:"none"`
	TimerCheckMetricsWhen        string        `key:"timerCheckMetricsWhen" effect:"none"`
	TimerSkipUnknownError        bool          `key:"timerSkipUnknownError" effect:"none"`
	TimerWarmEnable              bool          `key:"timerWarmEnable" effect:"none"`
	TimerStopDequeue             bool          `key:"timerStopDequeue" effect:"none"`
	TimerEnableRetryUntilSuccess bool          `key:"timerEnableRetryUntilSuccess" effect:"none"`
	TimerCongestNumEachSlot      int           `key:"timerCongestNumEachSlot" effect:"none"`
	TimerMetricSmallThreshold    int           `key:"timerMetricSmallThreshold" effect:"none"`
	TimerProgressLogIntervalMs   time.Duration `key:"timerProgressLogIntervalMs" effect:"none"`

	// Flushing and committing.
	FlushDiskType                     FlushDiskType `key:"flushDiskType" important:"true"`
	FlushIntervalCommitLog            time.Duration `key:"flushIntervalCommitLog" important:"true"`
	CommitIntervalCommitLog           time.Duration `key:"commitIntervalCommitLog" important:"true" effect:"none"`
	FlushCommitLogTimed               bool          `key:"flushCommitLogTimed" important:"true" effect:"none"`
	FlushIntervalConsumeQueue         time.Duration `key:"flushIntervalConsumeQueue" important:"true" effect:"none"`
	FlushCommitLogLeastPages          int           `key:"flushCommitLogLeastPages"`
	CommitCommitLogLeastPages         int           `key:"commitCommitLogLeastPages" effect:"none"`
	FlushLeastPagesWhenWarmMapedFile  int           `key:"flushLeastPagesWhenWarmMapedFile" effect:"none"`
	FlushConsumeQueueLeastPages       int           `key:"flushConsumeQueueLeastPages" effect:"none"`
	FlushCommitLogThoroughInterval    time.Duration `key:"flushCommitLogThoroughInterval"`
	CommitCommitLogThoroughInterval   time.Duration `key:"commitCommitLogThoroughInterval" effect:"none"`
	FlushConsumeQueueThoroughInterval time.Duration `key:"flushConsumeQueueThoroughInterval" effect:"none"`
	SyncFlushTimeout                  time.Duration `key:"syncFlushTimeout" important:"true"`
	FlushDelayOffsetInterval          time.Duration `key:"flushDelayOffsetInterval" effect:"none"`
	MaxRecoveryCommitlogFiles         int           `key:"maxRecoveryCommitlogFiles" important:"true" effect:"none"`
	CheckCRCOnRecover                 bool          `key:"checkCRCOnRecover"`
	EnableRunningFlagsInFlush         bool          `key:"enableRunningFlagsInFlush" important:"true" effect:"none"`

	// File retention and disk space.
	DeleteWhen                             string        `key:"deleteWhen" important:"true"`
	DiskMaxUsedSpaceRatio                  int           `key:"diskMaxUsedSpaceRatio" important:"true"`
	FileReservedTime                       int           `key:"fileReservedTime" important:"true"`
	DeleteFileBatchMax                     int           `key:"deleteFileBatchMax" important:"true" effect:"none"`
	DiskSpaceWarningLevelRatio             int           `key:"diskSpaceWarningLevelRatio"`
	DiskSpaceCleanForciblyRatio            int           `key:"diskSpaceCleanForciblyRatio"`
	CleanResourceInterval                  time.Duration `key:"cleanResourceInterval"`
	DeleteCommitLogFilesInterval           time.Duration `key:"deleteCommitLogFilesInterval" effect:"none"`
	DeleteConsumeQueueFilesInterval        time.Duration `key:"deleteConsumeQueueFilesInterval" effect:"none"`
	DestroyMapedFileIntervalForcibly       time.Duration `key:"destroyMapedFileIntervalForcibly" effect:"none"`
	RedeleteHangedFileInterval             time.Duration `key:"redeleteHangedFileInterval" effect:"none"`
	CleanFileForciblyEnable                bool          `key:"cleanFileForciblyEnable" important:"true"`
	MaxBatchDeleteFilesNum                 int           `key:"maxBatchDeleteFilesNum" effect:"none"`
	LogicalDiskSpaceCleanForciblyThreshold float64       `key:"logicalDiskSpaceCleanForciblyThreshold" effect:"none"`
	ReplicasPerDiskPartition               int           `key:"replicasPerDiskPartition" effect:"none"`
	EnableCleanExpiredOffset               bool          `key:"enableCleanExpiredOffset" important:"true" effect:"none"`

	// Messages.
	MaxMessageSize                           int           `key:"maxMessageSize"`
	MaxFilterMessageSize                     int           `key:"maxFilterMessageSize" effect:"none"`
	MaxTopicLength                           int           `key:"maxTopicLength" effect:"none"`
	AutoMessageVersionOnTopicLen             bool          `key:"autoMessageVersionOnTopicLen" effect:"none"`
	MessageDelayLevel                        string        `key:"messageDelayLevel"`
	EnabledAppendPropCRC                     bool          `key:"enabledAppendPropCRC" effect:"none"`
	ForceVerifyPropCRC                       bool          `key:"forceVerifyPropCRC" effect:"none"`
	DuplicationEnable                        bool          `key:"duplicationEnable" effect:"none"`
	UseReentrantLockWhenPutMessage           bool          `key:"useReentrantLockWhenPutMessage" effect:"none"`
	PutMessageTimeout                        time.Duration `key:"putMessageTimeout" effect:"none"`
	MaxAsyncPutMessageRequests               int           `key:"maxAsyncPutMessageRequests" important:"true" effect:"none"`
	WakeCommitWhenPutMessage                 bool          `key:"wakeCommitWhenPutMessage" important:"true" effect:"none"`
	WakeFlushWhenPutMessage                  bool          `key:"wakeFlushWhenPutMessage" important:"true" effect:"none"`
	DispatchFromSenderThread                 bool          `key:"dispatchFromSenderThread" important:"true" effect:"none"`
	OsPageCacheBusyTimeOutMills              time.Duration `key:"osPageCacheBusyTimeOutMills"`
	WarmMapedFileEnable                      bool          `key:"warmMapedFileEnable" important:"true"`
	TransientStorePoolEnable                 bool          `key:"transientStorePoolEnable" important:"true" effect:"none"`
	TransientStorePoolSize                   int           `key:"transientStorePoolSize" important:"true" effect:"none"`
	FastFailIfNoBufferInStorePool            bool          `key:"fastFailIfNoBufferInStorePool" important:"true" effect:"none"`
	WriteWithoutMmap                         bool          `key:"writeWithoutMmap" important:"true" effect:"none"`
	DebugLockEnable                          bool          `key:"debugLockEnable" effect:"none"`
	DiskFallRecorded                         bool          `key:"diskFallRecorded" effect:"none"`
	EnableScheduleMessageStats               bool          `key:"enableScheduleMessageStats" effect:"none"`
	EnableScheduleAsyncDeliver               bool          `key:"enableScheduleAsyncDeliver" effect:"none"`
	ScheduleAsyncDeliverMaxPendingLimit      int           `key:"scheduleAsyncDeliverMaxPendingLimit" effect:"none"`
	ScheduleAsyncDeliverMaxResendNum2Blocked int           `key:"scheduleAsyncDeliverMaxResendNum2Blocked" effect:"none"`

	// Reading.
	MaxTransferBytesOnMessageInMemory int           `key:"maxTransferBytesOnMessageInMemory" important:"true"`
	MaxTransferCountOnMessageInMemory int           `key:"maxTransferCountOnMessageInMemory" important:"true"`
	MaxTransferBytesOnMessageInDisk   int           `key:"maxTransferBytesOnMessageInDisk" important:"true" effect:"none"`
	MaxTransferCountOnMessageInDisk   int           `key:"maxTransferCountOnMessageInDisk" important:"true" effect:"none"`
	AccessMessageInMemoryMaxRatio     int           `key:"accessMessageInMemoryMaxRatio" important:"true"`
	AccessMessageInMemoryHotRatio     int           `key:"accessMessageInMemoryHotRatio" effect:"none"`
	DefaultQueryMaxNum                int           `key:"defaultQueryMaxNum"`
	PullBatchMaxMessageCount          int           `key:"pullBatchMaxMessageCount" effect:"none"`
	TravelCqFileNumWhenGetMessage     int           `key:"travelCqFileNumWhenGetMessage" effect:"none"`
	MaxConsumeQueueScan               int           `key:"maxConsumeQueueScan" effect:"none"`
	SampleCountThreshold              int           `key:"sampleCountThreshold" effect:"none"`
	ColdDataFlowControlEnable         bool          `key:"coldDataFlowControlEnable" effect:"none"`
	ColdDataScanEnable                bool          `key:"coldDataScanEnable" effect:"none"`
	DataReadAheadEnable               bool          `key:"dataReadAheadEnable"`
	TimerColdDataCheckIntervalMs      time.Duration `key:"timerColdDataCheckIntervalMs" effect:"none"`
	SampleSteps                       int           `key:"sampleSteps" effect:"none"`

	// Index.
	MessageIndexEnable    bool `key:"messageIndexEnable" important:"true"`
	MaxHashSlotNum        int  `key:"maxHashSlotNum" important:"true" effect:"none"`
	MaxIndexNum           int  `key:"maxIndexNum" important:"true" effect:"none"`
	MaxMsgsNumBatch       int  `key:"maxMsgsNumBatch"`
	MessageIndexSafe      bool `key:"messageIndexSafe" important:"true" effect:"none"`
	PutMsgIndexHightWater int  `key:"putMsgIndexHightWater" important:"true" effect:"none"`

	// Dispatch.
	DispatchCqThreads                               int           `key:"dispatchCqThreads" effect:"none"`
	DispatchCqCacheNum                              int           `key:"dispatchCqCacheNum" effect:"none"`
	EnableAsyncReput                                bool          `key:"enableAsyncReput" effect:"none"`
	RecheckReputOffsetFromCq                        bool          `key:"recheckReputOffsetFromCq" effect:"none"`
	EnableBuildConsumeQueueConcurrently             bool          `key:"enableBuildConsumeQueueConcurrently" effect:"none"`
	BatchDispatchRequestThreadPoolNums              int           `key:"batchDispatchRequestThreadPoolNums" effect:"none"`
	CorrectLogicMinOffsetSleepInterval              time.Duration `key:"correctLogicMinOffsetSleepInterval" effect:"none"`
	CorrectLogicMinOffsetForceInterval              time.Duration `key:"correctLogicMinOffsetForceInterval" effect:"none"`
	TopicQueueLockNum                               int           `key:"topicQueueLockNum" effect:"none"`
	PutConsumeQueueDataByFileChannel                bool          `key:"putConsumeQueueDataByFileChannel" effect:"none"`
	EnableAcceleratedRecovery                       bool          `key:"enableAcceleratedRecovery" effect:"none"`
	EnableLogConsumeQueueRepeatedlyBuildWhenRecover bool          `key:"enableLogConsumeQueueRepeatedlyBuildWhenRecover" effect:"none"`

	// Memory-map swapping.
	MappedFileSwapEnable            bool          `key:"mappedFileSwapEnable" effect:"none"`
	CommitLogForceSwapMapInterval   time.Duration `key:"commitLogForceSwapMapInterval" effect:"none"`
	CommitLogSwapMapInterval        time.Duration `key:"commitLogSwapMapInterval" effect:"none"`
	CommitLogSwapMapReserveFileNum  int           `key:"commitLogSwapMapReserveFileNum" effect:"none"`
	LogicQueueForceSwapMapInterval  time.Duration `key:"logicQueueForceSwapMapInterval" effect:"none"`
	LogicQueueSwapMapInterval       time.Duration `key:"logicQueueSwapMapInterval" effect:"none"`
	CleanSwapedMapInterval          time.Duration `key:"cleanSwapedMapInterval" effect:"none"`
	LogicQueueSwapMapReserveFileNum int           `key:"logicQueueSwapMapReserveFileNum" effect:"none"`
	SearchBcqByCacheEnable          bool          `key:"searchBcqByCacheEnable" effect:"none"`

	// LMQ (light message queues) and multi-dispatch.
	EnableLmq             bool `key:"enableLmq" readonly:"true"`
	EnableMultiDispatch   bool `key:"enableMultiDispatch" readonly:"true"`
	MaxLmqConsumeQueueNum int  `key:"maxLmqConsumeQueueNum"`
	EnableLmqQuota        bool `key:"enableLmqQuota"`

	// KV consume queue (Java RocksDB; our Pebble).
	CleanRocksDBDirtyCQIntervalMin int64         `key:"cleanRocksDBDirtyCQIntervalMin" effect:"none"`
	StatRocksDBCQIntervalSec       int64         `key:"statRocksDBCQIntervalSec" effect:"none"`
	MemTableFlushIntervalMs        time.Duration `key:"memTableFlushIntervalMs" effect:"none"`
	RealTimePersistRocksDBConfig   bool          `key:"realTimePersistRocksDBConfig" effect:"none"`
	EnableRocksDBLog               bool          `key:"enableRocksDBLog" effect:"none"`
	RocksdbCQDoubleWriteEnable     bool          `key:"rocksdbCQDoubleWriteEnable" effect:"none"`
	CombineCQUseRocksdbForLmq      bool          `key:"combineCQUseRocksdbForLmq" effect:"none"`
	RocksdbFlushWalFrequency       int           `key:"rocksdbFlushWalFrequency" effect:"none"`
	RocksdbWalFileRollingThreshold int64         `key:"rocksdbWalFileRollingThreshold" effect:"none"`

	// Replication (org/apache/rocketmq/store/config/MessageStoreConfig.java).
	BrokerRole                       BrokerRole    `key:"brokerRole" important:"true" readonly:"true"`
	HaListenPort                     int           `key:"haListenPort" important:"true" readonly:"true"`
	HaSendHeartbeatInterval          time.Duration `key:"haSendHeartbeatInterval" important:"true"`
	HaHousekeepingInterval           time.Duration `key:"haHousekeepingInterval"`
	HaTransferBatchSize              int           `key:"haTransferBatchSize"`
	HaMasterAddress                  string        `key:"haMasterAddress" important:"true"`
	HaMaxGapNotInSync                int           `key:"haMaxGapNotInSync" important:"true"`
	SlaveTimeout                     time.Duration `key:"slaveTimeout"`
	OffsetCheckInSlave               bool          `key:"offsetCheckInSlave" important:"true" effect:"none"`
	TotalReplicas                    int           `key:"totalReplicas" important:"true" effect:"none"`
	InSyncReplicas                   int           `key:"inSyncReplicas" important:"true"`
	MinInSyncReplicas                int           `key:"minInSyncReplicas" important:"true"`
	AllAckInSyncStateSet             bool          `key:"allAckInSyncStateSet" important:"true"`
	EnableAutoInSyncReplicas         bool          `key:"enableAutoInSyncReplicas" important:"true" effect:"none"`
	HaFlowControlEnable              bool          `key:"haFlowControlEnable" important:"true"`
	MaxHaTransferByteInSecond        int64         `key:"maxHaTransferByteInSecond"`
	HaMaxTimeSlaveNotCatchup         time.Duration `key:"haMaxTimeSlaveNotCatchup"`
	SyncMasterFlushOffsetWhenStartup bool          `key:"syncMasterFlushOffsetWhenStartup" effect:"none"`
	MaxChecksumRange                 int64         `key:"maxChecksumRange" effect:"none"`
	MaxSlaveResendLength             int64         `key:"maxSlaveResendLength" effect:"none"`
	SyncFromLastFile                 bool          `key:"syncFromLastFile"`
	AsyncLearner                     bool          `key:"asyncLearner"`
	ReadUnCommitted                  bool          `key:"readUnCommitted"`

	// DLedger commit log (not supported; accepted so files load).
	EnableDLegerCommitLog bool   `key:"enableDLegerCommitLog" readonly:"true" effect:"none"`
	DLegerGroup           string `key:"dLegerGroup" effect:"none"`
	DLegerPeers           string `key:"dLegerPeers" effect:"none"`
	DLegerSelfID          string `key:"dLegerSelfId" effect:"none"`
	PreferredLeaderID     string `key:"preferredLeaderId" effect:"none"`
	EnableBatchPush       bool   `key:"enableBatchPush" effect:"none"`
}

func defaultMessageStoreConfig(home string) MessageStoreConfig {
	ms := time.Millisecond
	return MessageStoreConfig{
		StorePathRootDir: filepath.Join(home, "store"),
		StoreType:        "default",

		MappedFileSizeCommitLog:         1 << 30,
		MappedFileSizeConsumeQueue:      300000 * 20,
		MappedFileSizeConsumeQueueExt:   48 << 20,
		MapperFileSizeBatchConsumeQueue: 300000 * 46,
		BitMapLengthConsumeQueueExt:     64,

		CompactionMappedFileSize:   100 << 20,
		CompactionCqMappedFileSize: 10 << 20,
		CompactionScheduleInternal: 15 * time.Minute,
		MaxOffsetMapSize:           100 << 20,
		CompactionThreadNum:        6,
		EnableCompaction:           true,

		TimerWheelEnable:           true,
		MappedFileSizeTimerLog:     100 << 20,
		TimerPrecisionMs:           1000 * ms,
		TimerRollWindowSlot:        3600 * 24 * 2,
		TimerFlushIntervalMs:       1000 * ms,
		TimerGetMessageThreadNum:   3,
		TimerPutMessageThreadNum:   3,
		TimerEnableCheckMetrics:    true,
		TimerMaxDelaySec:           3600 * 24 * 40, // Java: 3 days; our timers reach 40 days
		DisappearTimeAfterStart:    -1,
		TimerCheckMetricsWhen:      "05",
		TimerCongestNumEachSlot:    2147483647,
		TimerMetricSmallThreshold:  1000000,
		TimerProgressLogIntervalMs: 10000 * ms,

		FlushDiskType:                     FlushAsync,
		FlushIntervalCommitLog:            500 * ms,
		CommitIntervalCommitLog:           200 * ms,
		FlushCommitLogTimed:               true,
		FlushIntervalConsumeQueue:         1000 * ms,
		FlushCommitLogLeastPages:          4,
		CommitCommitLogLeastPages:         4,
		FlushLeastPagesWhenWarmMapedFile:  1024 / 4 * 16,
		FlushConsumeQueueLeastPages:       2,
		FlushCommitLogThoroughInterval:    10000 * ms,
		CommitCommitLogThoroughInterval:   200 * ms,
		FlushConsumeQueueThoroughInterval: 60000 * ms,
		SyncFlushTimeout:                  5000 * ms,
		FlushDelayOffsetInterval:          10000 * ms,
		MaxRecoveryCommitlogFiles:         30,
		CheckCRCOnRecover:                 true,

		DeleteWhen:                             "04",
		DiskMaxUsedSpaceRatio:                  75,
		FileReservedTime:                       72,
		DeleteFileBatchMax:                     10,
		DiskSpaceWarningLevelRatio:             90,
		DiskSpaceCleanForciblyRatio:            85,
		CleanResourceInterval:                  10000 * ms,
		DeleteCommitLogFilesInterval:           100 * ms,
		DeleteConsumeQueueFilesInterval:        100 * ms,
		DestroyMapedFileIntervalForcibly:       120000 * ms,
		RedeleteHangedFileInterval:             120000 * ms,
		CleanFileForciblyEnable:                true,
		MaxBatchDeleteFilesNum:                 50,
		LogicalDiskSpaceCleanForciblyThreshold: 0.8,
		ReplicasPerDiskPartition:               1,

		MaxMessageSize:                           4 << 20,
		MaxFilterMessageSize:                     16000,
		MaxTopicLength:                           127,
		AutoMessageVersionOnTopicLen:             true,
		MessageDelayLevel:                        "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		UseReentrantLockWhenPutMessage:           true,
		PutMessageTimeout:                        8000 * ms,
		MaxAsyncPutMessageRequests:               5000,
		WakeCommitWhenPutMessage:                 true,
		OsPageCacheBusyTimeOutMills:              1000 * ms,
		TransientStorePoolSize:                   5,
		DiskFallRecorded:                         true,
		EnableScheduleMessageStats:               true,
		ScheduleAsyncDeliverMaxPendingLimit:      2000,
		ScheduleAsyncDeliverMaxResendNum2Blocked: 3,

		MaxTransferBytesOnMessageInMemory: 256 << 10,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 << 10,
		MaxTransferCountOnMessageInDisk:   8,
		AccessMessageInMemoryMaxRatio:     40,
		AccessMessageInMemoryHotRatio:     26,
		DefaultQueryMaxNum:                32,
		PullBatchMaxMessageCount:          160,
		TravelCqFileNumWhenGetMessage:     1,
		MaxConsumeQueueScan:               20000,
		SampleCountThreshold:              5000,
		DataReadAheadEnable:               true,
		TimerColdDataCheckIntervalMs:      60000 * ms,
		SampleSteps:                       32,

		MessageIndexEnable:    true,
		MaxHashSlotNum:        5000000,
		MaxIndexNum:           5000000 * 4,
		MaxMsgsNumBatch:       64,
		PutMsgIndexHightWater: 600000,

		DispatchCqThreads:                  10,
		DispatchCqCacheNum:                 4096,
		EnableAsyncReput:                   true,
		BatchDispatchRequestThreadPoolNums: 16,
		CorrectLogicMinOffsetSleepInterval: 1 * ms,
		CorrectLogicMinOffsetForceInterval: 5 * time.Minute,
		TopicQueueLockNum:                  32,
		PutConsumeQueueDataByFileChannel:   true,

		MappedFileSwapEnable:            true,
		CommitLogForceSwapMapInterval:   12 * time.Hour,
		CommitLogSwapMapInterval:        time.Hour,
		CommitLogSwapMapReserveFileNum:  100,
		LogicQueueForceSwapMapInterval:  12 * time.Hour,
		LogicQueueSwapMapInterval:       time.Hour,
		CleanSwapedMapInterval:          5 * time.Minute,
		LogicQueueSwapMapReserveFileNum: 20,
		SearchBcqByCacheEnable:          true,

		MaxLmqConsumeQueueNum: 20000,

		CleanRocksDBDirtyCQIntervalMin: 60,
		StatRocksDBCQIntervalSec:       10,
		MemTableFlushIntervalMs:        time.Hour,
		RealTimePersistRocksDBConfig:   true,
		RocksdbFlushWalFrequency:       1024,
		RocksdbWalFileRollingThreshold: 1 << 30,

		BrokerRole:                RoleAsyncMaster,
		HaListenPort:              0, // Java's BrokerStartup: ≤ 0 means listenPort + 1
		HaSendHeartbeatInterval:   5000 * ms,
		HaHousekeepingInterval:    20000 * ms,
		HaTransferBatchSize:       32 << 10,
		HaMaxGapNotInSync:         256 << 20,
		SlaveTimeout:              3000 * ms,
		TotalReplicas:             1,
		InSyncReplicas:            1,
		MinInSyncReplicas:         1,
		MaxHaTransferByteInSecond: 100 << 20,
		HaMaxTimeSlaveNotCatchup:  15000 * ms,
		MaxChecksumRange:          1 << 30,
		MaxSlaveResendLength:      256 << 20,
	}
}

// CommitLogDir is storePathCommitLog or <storePathRootDir>/commitlog.
func (c *MessageStoreConfig) CommitLogDir() string {
	if c.StorePathCommitLog != "" {
		return c.StorePathCommitLog
	}
	return filepath.Join(c.StorePathRootDir, "commitlog")
}

// ConsumeQueueDir is <storePathRootDir>/consumequeue.
func (c *MessageStoreConfig) ConsumeQueueDir() string {
	return filepath.Join(c.StorePathRootDir, "consumequeue")
}

// ConfigDir is <storePathRootDir>/config, home of topics.json and the
// other metadata files (Java's BrokerPathConfigHelper).
func (c *MessageStoreConfig) ConfigDir() string {
	return filepath.Join(c.StorePathRootDir, "config")
}

// TopicConfigPath is <storePathRootDir>/config/topics.json.
func (c *MessageStoreConfig) TopicConfigPath() string {
	return filepath.Join(c.ConfigDir(), "topics.json")
}

// TopicQueueMappingPath is <storePathRootDir>/config/topicQueueMapping.json
// (docs/static-topics.md §2.6).
func (c *MessageStoreConfig) TopicQueueMappingPath() string {
	return filepath.Join(c.ConfigDir(), "topicQueueMapping.json")
}

// EpochFilePath is storePathEpochFile or <storePathRootDir>/epochFileCheckpoint.
func (c *MessageStoreConfig) EpochFilePath() string {
	if c.StorePathEpochFile != "" {
		return c.StorePathEpochFile
	}
	return filepath.Join(c.StorePathRootDir, "epochFileCheckpoint")
}

// BrokerIdentityPath is storePathBrokerIdentity or <storePathRootDir>/brokerIdentity.
func (c *MessageStoreConfig) BrokerIdentityPath() string {
	if c.StorePathBrokerIdentity != "" {
		return c.StorePathBrokerIdentity
	}
	return filepath.Join(c.StorePathRootDir, "brokerIdentity")
}

// DelayLevels parses messageDelayLevel ("1s 5s … 2h", units s/m/h/d) into
// durations; level n is element n-1.
func (c *MessageStoreConfig) DelayLevels() ([]time.Duration, error) {
	return ParseDelayLevels(c.MessageDelayLevel)
}
