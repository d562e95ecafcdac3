package auth

import (
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// fieldRule names a header field that holds a resource (Apache's
// @RocketMQResource): its extFields key, the resource type and, for a list,
// the separator.
type fieldRule struct {
	key      string
	typ      ResourceType
	splitter string
}

// codeRule is a request header's @RocketMQAction: the actions and whether
// the request falls back to the Cluster resource when no field names one.
type codeRule struct {
	actions []Action
	cluster bool
	fields  []fieldRule
}

// codeRules is Apache 5.5.0's annotation table (the @RocketMQAction and
// @RocketMQResource annotations of org/apache/rocketmq/remoting/protocol/
// header/*, read by RequestHeaderRegistry), for the codes its
// DefaultAuthorizationContextBuilder does not handle by name. A code
// without a rule has no authorization check, as in Apache.
var codeRules = map[int32]codeRule{
	17:     {actions: []Action{ActCreate}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                               // CreateTopicRequestHeader
	18:     {actions: []Action{ActCreate}},                                                                                                             // CreateTopicListRequestHeader
	21:     {actions: []Action{ActGet}},                                                                                                                // GetAllTopicConfigRequestHeader
	29:     {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // SearchOffsetRequestHeader
	30:     {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // GetMaxOffsetRequestHeader
	31:     {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // GetMinOffsetRequestHeader
	32:     {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // GetEarliestMsgStoretimeRequestHeader
	33:     {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // ViewMessageRequestHeader
	39:     {actions: []Action{ActPub}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // CheckTransactionStateRequestHeader
	40:     {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}}},                                                          // NotifyConsumerIdsChangedRequestHeader
	100:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // PutKVConfigRequestHeader
	101:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetKVConfigRequestHeader
	102:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // DeleteKVConfigRequestHeader
	103:    {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // RegisterBrokerRequestHeader
	104:    {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // UnRegisterBrokerRequestHeader
	201:    {actions: []Action{ActGet}},                                                                                                                // GetAllSubscriptionGroupRequestHeader
	202:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // GetTopicStatsInfoRequestHeader
	203:    {actions: []Action{ActGet}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}}},                                                          // GetConsumerConnectionListRequestHeader
	204:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetProducerConnectionListRequestHeader
	205:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // WipeWritePermOfBrokerRequestHeader
	207:    {actions: []Action{ActDelete}, fields: []fieldRule{{"groupName", ResGroup, ""}}},                                                           // DeleteSubscriptionGroupRequestHeader
	208:    {actions: []Action{ActGet}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}, {"topicList", ResTopic, ";"}}},   // GetConsumeStatsRequestHeader
	215:    {actions: []Action{ActDelete}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                               // DeleteTopicRequestHeader
	216:    {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // DeleteTopicFromNamesrvRequestHeader
	217:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // RegisterTopicRequestHeader
	219:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetKVListByNamespaceRequestHeader
	222:    {actions: []Action{ActUpdate}, fields: []fieldRule{{"group", ResGroup, ""}, {"topic", ResTopic, ""}}},                                      // ResetOffsetRequestHeader
	223:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}, {"group", ResGroup, ""}}},                                         // GetConsumerStatusRequestHeader
	224:    {actions: []Action{ActList}},                                                                                                               // GetTopicsByClusterRequestHeader
	300:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // QueryTopicConsumeByWhoRequestHeader
	303:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}, {"group", ResGroup, ""}}},                                         // QueryConsumeTimeSpanRequestHeader
	307:    {actions: []Action{ActGet}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}}},                                                          // GetConsumerRunningInfoRequestHeader
	308:    {actions: []Action{ActGet}, fields: []fieldRule{{"filterGroups", ResGroup, ","}, {"compareGroup", ResGroup, ""}, {"topic", ResTopic, ""}}}, // QueryCorrectionOffsetHeader
	309:    {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // ConsumeMessageDirectlyResultRequestHeader
	314:    {actions: []Action{ActUpdate}, fields: []fieldRule{{"destGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                  // CloneGroupOffsetRequestHeader
	315:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // ViewBrokerStatsDataRequestHeader
	317:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetConsumeStatsInBrokerHeader
	321:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}, {"consumerGroup", ResGroup, ""}}},                                 // QueryConsumeQueueRequestHeader
	322:    {actions: []Action{ActGet}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                           // QueryDataVersionRequestHeader
	323:    {actions: []Action{ActUpdate}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                               // ResumeCheckHalfMessageRequestHeader
	326:    {actions: []Action{ActSub}, fields: []fieldRule{{"producerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // ReplyMessageRequestHeader
	327:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // AddWritePermOfBrokerRequestHeader
	328:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetAllProducerInfoRequestHeader
	343:    {actions: []Action{ActGet}, fields: []fieldRule{{"group", ResGroup, ""}}},                                                                  // QueryTopicsByConsumerRequestHeader
	345:    {actions: []Action{ActGet}, fields: []fieldRule{{"group", ResGroup, ""}, {"topic", ResTopic, ""}}},                                         // QuerySubscriptionByConsumerRequestHeader
	351:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // GetTopicConfigRequestHeader
	352:    {actions: []Action{ActGet}, fields: []fieldRule{{"group", ResGroup, ""}}},                                                                  // GetSubscriptionGroupConfigRequestHeader
	353:    {actions: []Action{ActUpdate}, fields: []fieldRule{{"group", ResGroup, ""}, {"topic", ResTopic, ""}}},                                      // UpdateGroupForbiddenRequestHeader
	354:    {actions: []Action{ActGet}, fields: []fieldRule{{"topic", ResTopic, ""}}},                                                                  // CheckRocksdbCqWriteProgressRequestHeader
	355:    {actions: []Action{ActGet}, cluster: true},                                                                                                 // ExportRocksDBConfigToJsonRequestHeader
	901:    {actions: []Action{ActGet}, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                                          // GetBrokerMemberGroupRequestHeader
	902:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // AddBrokerRequestHeader
	903:    {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"brokerClusterName", ResCluster, ""}}},                                  // RemoveBrokerRequestHeader
	904:    {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // BrokerHeartbeatRequestHeader
	905:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // NotifyMinBrokerIdChangeRequestHeader
	906:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // ExchangeHAInfoRequestHeader
	908:    {actions: []Action{ActUpdate}, cluster: true},                                                                                              // ResetMasterFlushOffsetHeader
	1001:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // AlterSyncStateSetRequestHeader
	1002:   {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // ElectMasterRequestHeader
	1003:   {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // RegisterBrokerToControllerRequestHeader
	1004:   {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetReplicaInfoRequestHeader
	1008:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // NotifyBrokerRoleChangedRequestHeader
	1011:   {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // CleanControllerBrokerDataRequestHeader
	1012:   {actions: []Action{ActGet}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                           // GetNextBrokerIdRequestHeader
	1013:   {actions: []Action{ActUpdate}, cluster: true, fields: []fieldRule{{"clusterName", ResCluster, ""}}},                                        // ApplyBrokerIdRequestHeader
	3001:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // CreateUserRequestHeader
	3002:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // UpdateUserRequestHeader
	3003:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // DeleteUserRequestHeader
	3004:   {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetUserRequestHeader
	3005:   {actions: []Action{ActGet}, cluster: true},                                                                                                 // ListUsersRequestHeader
	3006:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // CreateAclRequestHeader
	3007:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // UpdateAclRequestHeader
	3008:   {actions: []Action{ActUpdate}, cluster: true},                                                                                              // DeleteAclRequestHeader
	3009:   {actions: []Action{ActGet}, cluster: true},                                                                                                 // GetAclRequestHeader
	3010:   {actions: []Action{ActGet}, cluster: true},                                                                                                 // ListAclsRequestHeader
	200050: {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // PopMessageRequestHeader
	200051: {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // AckMessageRequestHeader
	200052: {actions: []Action{ActSub}, fields: []fieldRule{{"topic", ResTopic, ""}, {"consumerGroup", ResGroup, ""}}},                                 // PeekMessageRequestHeader
	200053: {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // ChangeInvisibleTimeRequestHeader
	200054: {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // NotificationRequestHeader
	200055: {actions: []Action{ActGet}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}, {"topic", ResTopic, ""}}},                                 // PollingInfoRequestHeader
	200073: {actions: []Action{ActSub}, fields: []fieldRule{{"consumerGroup", ResGroup, ""}}},                                                          // NotifyUnsubscribeLiteRequestHeader
}

// ext keys Apache's builder reads by name.
const (
	keyTopic         = "topic"
	keyGroup         = "group"
	keyConsumerGroup = "consumerGroup"
	keyA             = "a" // SendMessageRequestHeaderV2.producerGroup
	keyB             = "b" // SendMessageRequestHeaderV2.topic
)

// RemotingChecks maps a remoting request to the checks Apache's
// DefaultAuthorizationContextBuilder.build(ChannelHandlerContext,
// RemotingCommand) makes of it: the codes it names, then the annotation
// table. clusterName names the Cluster resource. A body that does not
// decode is an error (Apache: "parse authorization context error.").
func RemotingChecks(reqCode int32, ext map[string]string, body []byte, clusterName string) ([]Check, error) {
	return appendRemotingChecks(nil, reqCode, ext, body, clusterName)
}

// The action lists of the checks RemotingChecks makes by name, shared
// (read only).
var (
	actsPub       = []Action{ActPub}
	actsSub       = []Action{ActSub}
	actsSubGet    = []Action{ActSub, ActGet}
	actsPubSubGet = []Action{ActPub, ActSub, ActGet}
	actsSubUpdate = []Action{ActSub, ActUpdate}
)

// appendRemotingChecks is RemotingChecks appending to out (the hook passes
// a buffer on its stack: a send's one check allocates nothing).
func appendRemotingChecks(out []Check, reqCode int32, ext map[string]string, body []byte, clusterName string) ([]Check, error) {
	if len(ext) == 0 {
		return out, nil
	}
	add := func(r Resource, acts []Action) { out = append(out, Check{Resource: r, Actions: acts}) }
	switch reqCode {
	case code.GetRouteInfoByTopic:
		if t := ext[keyTopic]; isRetryTopic(t) {
			add(GroupResource(t), actsSubGet)
		} else {
			add(TopicResource(t), actsPubSubGet)
		}
	case code.SendMessage:
		if t := ext[keyTopic]; isRetryTopic(t) {
			if g := ext[keyGroup]; strings.TrimSpace(g) != "" {
				add(GroupResource(g), actsSub)
			} else {
				add(GroupResource(t), actsSub)
			}
		} else {
			add(TopicResource(t), actsPub)
		}
	case code.SendMessageV2, code.SendBatchMessage:
		if t := ext[keyB]; isRetryTopic(t) {
			if g := ext[keyA]; strings.TrimSpace(g) != "" {
				add(GroupResource(g), actsSub)
			} else {
				add(GroupResource(t), actsSub)
			}
		} else {
			add(TopicResource(t), actsPub)
		}
	case code.RecallMessage:
		add(TopicResource(ext[keyTopic]), actsPub)
	case code.EndTransaction:
		if t := ext[keyTopic]; strings.TrimSpace(t) != "" {
			add(TopicResource(t), actsPub)
		}
	case code.ConsumerSendMsgBack:
		add(GroupResource(ext[keyGroup]), actsSub)
	case code.PullMessage:
		if t := ext[keyTopic]; !isRetryTopic(t) {
			add(TopicResource(t), actsSub)
		}
		add(GroupResource(ext[keyConsumerGroup]), actsSub)
	case code.QueryMessage:
		add(TopicResource(ext[keyTopic]), actsSubGet)
	case code.HeartBeat:
		var hb struct {
			ConsumerDataSet []struct {
				GroupName           string `json:"groupName"`
				SubscriptionDataSet []struct {
					Topic string `json:"topic"`
				} `json:"subscriptionDataSet"`
			} `json:"consumerDataSet"`
		}
		if err := protocol.Unmarshal(body, &hb); err != nil {
			return nil, authError("parse authorization context error.")
		}
		for _, cd := range hb.ConsumerDataSet {
			add(GroupResource(cd.GroupName), actsSub)
			for _, sd := range cd.SubscriptionDataSet {
				if !isRetryTopic(sd.Topic) {
					add(TopicResource(sd.Topic), actsSub)
				}
			}
		}
	case code.UnregisterClient:
		if g := ext[keyConsumerGroup]; strings.TrimSpace(g) != "" {
			add(GroupResource(g), actsSub)
		}
	case code.GetConsumerListByGroup:
		add(GroupResource(ext[keyConsumerGroup]), actsSubGet)
	case code.QueryConsumerOffset:
		if t := ext[keyTopic]; !isRetryTopic(t) {
			add(TopicResource(t), actsSubGet)
		}
		add(GroupResource(ext[keyConsumerGroup]), actsSubGet)
	case code.UpdateConsumerOffset:
		if t := ext[keyTopic]; !isRetryTopic(t) {
			add(TopicResource(t), actsSubUpdate)
		}
		add(GroupResource(ext[keyConsumerGroup]), actsSubUpdate)
	case code.LockBatchMQ, code.UnlockBatchMQ:
		var lb struct {
			ConsumerGroup string                  `json:"consumerGroup"`
			MQSet         []protocol.MessageQueue `json:"mqSet"`
		}
		if err := protocol.Unmarshal(body, &lb); err != nil {
			return nil, authError("parse authorization context error.")
		}
		add(GroupResource(lb.ConsumerGroup), actsSub)
		for _, mq := range lb.MQSet {
			if !isRetryTopic(mq.Topic) {
				add(TopicResource(mq.Topic), actsSub)
			}
		}
	default:
		rule, ok := codeRules[reqCode]
		if !ok {
			return out, nil
		}
		for _, f := range rule.fields {
			v, ok := ext[f.key]
			if !ok {
				continue
			}
			vals := []string{v}
			if f.splitter != "" {
				vals = splitNonEmpty(v, f.splitter)
			}
			for _, val := range vals {
				if f.typ == ResTopic && isRetryTopic(val) {
					add(GroupResource(val), rule.actions)
				} else {
					add(Resource{Type: f.typ, Name: val}, rule.actions)
				}
			}
		}
		if len(out) == 0 && rule.cluster {
			add(ClusterResource(clusterName), rule.actions)
		}
	}
	return out, nil
}

// splitNonEmpty is StringUtils.split(s, separatorChars): any of the
// separator characters splits, empty pieces are dropped.
func splitNonEmpty(s, seps string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) })
}
