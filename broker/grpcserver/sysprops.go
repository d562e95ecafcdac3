package grpcserver

import (
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
)

// systemProperty reports a property name RocketMQ reserves (Java's
// MessageConst.STRING_HASH_SET, and the never-stored transient ones): a
// 5.x producer may not use one as a user property
// (ILLEGAL_MESSAGE_PROPERTY_KEY), and a message given to a 5.x client
// carries them as system properties, not user ones.
func systemProperty(key string) bool {
	switch key {
	case
		message.PropertyKeys, message.PropertyTags, message.PropertyWaitStoreMsgOK, message.PropertyDelayTimeLevel,
		message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS,
		message.PropertyTimerOutMS, message.PropertyTimerEnqueueMS, message.PropertyTimerDequeueMS,
		message.PropertyTimerRollTimes, message.PropertyTimerDelUniqKey, message.PropertyTimerDelayLevel,
		message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyRetryTopic,
		message.PropertyOriginMessageID, message.PropertyReconsumeTime, message.PropertyMaxReconsumeTimes,
		message.PropertyUniqClientMessageIDKeyIdx, message.PropertyTransactionPrepared, message.PropertyProducerGroup,
		message.PropertyTransactionID, message.PropertyCheckImmunityTimeInSec, message.PropertyTranPreparedQueueOffset,
		message.PropertyTransactionCheckTimes, message.PropertyMinOffset, message.PropertyMaxOffset,
		message.PropertyCluster, message.PropertyMessageType, message.PropertyCorrelationID,
		message.PropertyMessageReplyToClient, message.PropertyMessageTTL, message.PropertyMessageArriveTime,
		message.PropertyPushReplyTime, message.PropertyMsgRegion, message.PropertyTraceSwitch,
		message.PropertyShardingKey, message.PropertyInstanceID, message.PropertyInnerMultiDispatch,
		message.PropertyInnerMultiQueueOffset, message.PropertyLiteTopic, message.PropertyPopCK,
		message.PropertyPopCKOffset, message.PropertyFirstPopTime, message.PropertyInnerNum, message.PropertyInnerBase,
		message.PropertyExtendUniqInfo, message.PropertyDupInfo, message.PropertyBuyerID, message.PropertyTransferFlag,
		message.PropertyCorrectionFlag, message.PropertyMQ2Flag, message.PropertyConsumeStartTimestamp,
		message.PropertyTraceContext, message.PropertyBornHost, message.PropertyBornTimestamp,
		message.PropertyDLQOriginTopic, message.PropertyDLQOriginMessageID, message.PropertyRedirect,
		message.PropertyForwardQueueID, message.PropertyCRC32, message.PropertyPriority,
		"STARTDELIVERTIME", "__STARTDELIVERTIME":
		return true
	}
	return strings.HasPrefix(key, message.TransientPrefix)
}
