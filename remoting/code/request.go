package code

// Request codes: nameserver (docs/protocol.md §3.2).
const (
	PutKVConfig                   int32 = 100
	GetKVConfig                   int32 = 101
	DeleteKVConfig                int32 = 102
	RegisterBroker                int32 = 103
	UnregisterBroker              int32 = 104
	GetRouteInfoByTopic           int32 = 105
	GetBrokerClusterInfo          int32 = 106
	WipeWritePermOfBroker         int32 = 205
	GetAllTopicListFromNameserver int32 = 206
	DeleteTopicInNamesrv          int32 = 216
	RegisterTopicInNamesrv        int32 = 217
	GetKVListByNamespace          int32 = 219
	GetTopicsByCluster            int32 = 224
	GetSystemTopicListFromNS      int32 = 304
	GetUnitTopicList              int32 = 311
	GetHasUnitSubTopicList        int32 = 312
	GetHasUnitSubUnUnitTopicList  int32 = 313
	UpdateNamesrvConfig           int32 = 318
	GetNamesrvConfig              int32 = 319
	QueryDataVersion              int32 = 322
	AddWritePermOfBroker          int32 = 327
	GetBrokerMemberGroup          int32 = 901
	BrokerHeartbeat               int32 = 904
)

// Request codes: broker, client paths (docs/protocol.md §3.3).
const (
	SendMessage             int32 = 10
	PullMessage             int32 = 11
	QueryMessage            int32 = 12
	QueryConsumerOffset     int32 = 14
	UpdateConsumerOffset    int32 = 15
	SearchOffsetByTimestamp int32 = 29
	GetMaxOffset            int32 = 30
	GetMinOffset            int32 = 31
	GetEarliestMsgStoreTime int32 = 32
	ViewMessageByID         int32 = 33
	HeartBeat               int32 = 34
	UnregisterClient        int32 = 35
	ConsumerSendMsgBack     int32 = 36
	EndTransaction          int32 = 37
	GetConsumerListByGroup  int32 = 38
	LockBatchMQ             int32 = 41
	UnlockBatchMQ           int32 = 42
	CheckClientConfig       int32 = 46
	SendMessageV2           int32 = 310
	SendBatchMessage        int32 = 320
	SendReplyMessage        int32 = 324
	SendReplyMessageV2      int32 = 325
	LitePullMessage         int32 = 361
	RecallMessage           int32 = 370
	QueryAssignment         int32 = 400
	SetMessageRequestMode   int32 = 401
	PopMessage              int32 = 200050
	AckMessage              int32 = 200051
	PeekMessage             int32 = 200052
	ChangeMessageInvisible  int32 = 200053
	Notification            int32 = 200054
	PollingInfo             int32 = 200055
	BatchAckMessage         int32 = 200151
	PopLiteMessage          int32 = 200070
	LiteSubscriptionCtl     int32 = 200071
	NotifyUnsubscribeLite   int32 = 200073
)

// Request codes: broker admin surface (docs/protocol.md §3.4).
const (
	UpdateAndCreateTopic                 int32 = 17
	UpdateAndCreateTopicList             int32 = 18
	GetAllTopicConfig                    int32 = 21
	GetAllConsumerOffset                 int32 = 43
	GetAllDelayOffset                    int32 = 45
	GetTimerCheckPoint                   int32 = 60
	GetTimerMetrics                      int32 = 61
	UpdateBrokerConfig                   int32 = 25
	GetBrokerConfig                      int32 = 26
	GetBrokerRuntimeInfo                 int32 = 28
	UpdateAndCreateSubscriptionGroup     int32 = 200
	UpdateAndCreateSubscriptionGroupList int32 = 225
	GetAllProducerInfo                   int32 = 328
	GetAllSubscriptionGroupConfig        int32 = 201
	GetTopicStatsInfo                    int32 = 202
	GetConsumerConnectionList            int32 = 203
	GetProducerConnectionList            int32 = 204
	DeleteSubscriptionGroup              int32 = 207
	GetConsumeStats                      int32 = 208
	DeleteTopicInBroker                  int32 = 215
	InvokeBrokerToResetOffset            int32 = 222
	InvokeBrokerToGetConsumerStatus      int32 = 223
	QueryTopicConsumeByWho               int32 = 300
	GetConsumerRunningInfo               int32 = 307
	ConsumeMessageDirectly               int32 = 309
	GetSystemTopicListFromBroker         int32 = 305
	ViewBrokerStatsData                  int32 = 315
	GetBrokerConsumeStats                int32 = 317
	QueryTopicsByConsumer                int32 = 343
	GetTopicConfig                       int32 = 351
	GetSubscriptionGroupConfig           int32 = 352
	UpdateAndCreateStaticTopic           int32 = 513
	GetAllMessageRequestMode             int32 = 402
	CleanExpiredConsumeQueue             int32 = 306
	CleanUnusedTopic                     int32 = 316
	QueryConsumeQueue                    int32 = 321
	DeleteExpiredCommitLog               int32 = 329
	UpdateColdDataFlowCtrConfig          int32 = 2001
	RemoveColdDataFlowCtrConfig          int32 = 2002
	GetColdDataFlowCtrInfo               int32 = 2003
	SetCommitLogReadMode                 int32 = 2004
	PopRollback                          int32 = 200056
	QueryConsumeTimeSpan                 int32 = 303
	QueryCorrectionOffset                int32 = 308
	CloneGroupOffset                     int32 = 314
	QuerySubscriptionByConsumer          int32 = 345
	UpdateAndGetGroupForbidden           int32 = 353
)

// Request codes: broker to client (docs/protocol.md §3.5).
const (
	CheckTransactionState       int32 = 39
	NotifyConsumerIdsChanged    int32 = 40
	ResetConsumerClientOffset   int32 = 220
	GetConsumerStatusFromClient int32 = 221
	PushReplyMessageToClient    int32 = 326
)

// Request codes: lite topics (docs/lite-topics.md §5–§7). ListLiteTopics is ours,
// not upstream's: a paged listing of a parent's lite topics.
const (
	AckLiteMessage      int32 = 200072
	GetBrokerLiteInfo   int32 = 200074
	GetParentTopicInfo  int32 = 200075
	GetLiteTopicInfo    int32 = 200076
	GetLiteClientInfo   int32 = 200077
	GetLiteGroupInfo    int32 = 200078
	TriggerLiteDispatch int32 = 200079
	ListLiteTopics      int32 = 890074
)

// Request codes: rmq-go extensions, in a range Apache's RequestCode table
// does not use (docs/compatibility.md). GetPopStatus reports pop state
// (in-flight messages, blocked orderly queues, revive progress).
const (
	GetPopStatus int32 = 890050
)

// Request codes: replication and the HA controller (docs/replication.md).
// BrokerHeartbeat (904) is above with the nameserver codes; the controller
// takes it too. 1014–1018 are upstream's jRaft-internal entry types: they
// never arrive from brokers or tools and are refused.
const (
	NotifyMinBrokerIDChange         int32 = 905
	ExchangeBrokerHAInfo            int32 = 906
	GetBrokerHAStatus               int32 = 907
	ResetMasterFlushOffset          int32 = 908
	ControllerAlterSyncStateSet     int32 = 1001
	ControllerElectMaster           int32 = 1002
	ControllerRegisterBroker        int32 = 1003
	ControllerGetReplicaInfo        int32 = 1004
	ControllerGetMetadataInfo       int32 = 1005
	ControllerGetSyncStateData      int32 = 1006
	GetBrokerEpochCache             int32 = 1007
	NotifyBrokerRoleChanged         int32 = 1008
	UpdateControllerConfig          int32 = 1009
	GetControllerConfig             int32 = 1010
	CleanBrokerData                 int32 = 1011
	ControllerGetNextBrokerID       int32 = 1012
	ControllerApplyBrokerID         int32 = 1013
	BrokerCloseChannelRequest       int32 = 1014
	CheckNotActiveBrokerRequest     int32 = 1015
	GetBrokerLiveInfoRequest        int32 = 1016
	GetSyncStateDataRequest         int32 = 1017
	RaftBrokerHeartBeatEventRequest int32 = 1018
)

// Request codes: the auth module's user and ACL administration (ACL 2.0,
// Apache 5.3+; docs/auth.md).
const (
	AuthCreateUser int32 = 3001
	AuthUpdateUser int32 = 3002
	AuthDeleteUser int32 = 3003
	AuthGetUser    int32 = 3004
	AuthListUser   int32 = 3005
	AuthCreateACL  int32 = 3006
	AuthUpdateACL  int32 = 3007
	AuthDeleteACL  int32 = 3008
	AuthGetACL     int32 = 3009
	AuthListACL    int32 = 3010
)
