// Package code holds RocketMQ's request and response codes (docs/protocol.md §2–3).
// The numbers are the wire contract; the names follow Apache RocketMQ's.
package code

// Response codes.
const (
	Success                    int32 = 0
	SystemError                int32 = 1
	SystemBusy                 int32 = 2
	RequestCodeNotSupported    int32 = 3
	TransactionFailed          int32 = 4
	FlushDiskTimeout           int32 = 10
	SlaveNotAvailable          int32 = 11
	FlushSlaveTimeout          int32 = 12
	MessageIllegal             int32 = 13
	ServiceNotAvailable        int32 = 14
	VersionNotSupported        int32 = 15
	NoPermission               int32 = 16
	TopicNotExist              int32 = 17
	TopicExistAlready          int32 = 18
	PullNotFound               int32 = 19
	PullRetryImmediately       int32 = 20
	PullOffsetMoved            int32 = 21
	QueryNotFound              int32 = 22
	SubscriptionParseFailed    int32 = 23
	SubscriptionNotExist       int32 = 24
	SubscriptionNotLatest      int32 = 25
	SubscriptionGroupNotExist  int32 = 26
	FilterDataNotExist         int32 = 27
	FilterDataNotLatest        int32 = 28
	InvalidParameter           int32 = 29
	TransactionShouldCommit    int32 = 200
	TransactionShouldRollback  int32 = 201
	TransactionStateUnknow     int32 = 202
	TransactionStateGroupWrong int32 = 203
	NoBuyerID                  int32 = 204
	NotInCurrentUnit           int32 = 205
	ConsumerNotOnline          int32 = 206
	ConsumeMsgTimeout          int32 = 207
	NoMessage                  int32 = 208
	PollingFull                int32 = 209
	PollingTimeout             int32 = 210
	BrokerNotExist             int32 = 211
	BrokerDispatchNotComplete  int32 = 212
	BroadcastConsumption       int32 = 213
	FlowControl                int32 = 215
	NotLeaderForQueue          int32 = 501
	IllegalOperation           int32 = 604
	GoAway                     int32 = 1500
	// Controller answers (docs/replication.md). Request codes 2001–2004
	// (cold-data flow control) share these numbers; they never meet.
	ControllerFencedMasterEpoch          int32 = 2000
	ControllerFencedSyncStateSetEpoch    int32 = 2001
	ControllerInvalidMaster              int32 = 2002
	ControllerInvalidReplicas            int32 = 2003
	ControllerMasterNotAvailable         int32 = 2004
	ControllerInvalidRequest             int32 = 2005
	ControllerBrokerNotAlive             int32 = 2006
	ControllerNotLeader                  int32 = 2007
	ControllerBrokerMetadataNotExist     int32 = 2008
	ControllerInvalidCleanBrokerMetadata int32 = 2009
	ControllerBrokerNeedToBeRegistered   int32 = 2010
	ControllerMasterStillExist           int32 = 2011
	ControllerElectMasterFailed          int32 = 2012
	ControllerAlterSyncStateSetFailed    int32 = 2013
	ControllerBrokerIDInvalid            int32 = 2014
	ControllerJRaftInternalError         int32 = 2015
	ControllerBrokerLiveInfoNotExists    int32 = 2016
	LMQQuotaExceeded                     int32 = 2017
	LiteSubscriptionQuotaExceeded        int32 = 2018
	UserNotExist                         int32 = 3001
	PolicyNotExist                       int32 = 3002
)
