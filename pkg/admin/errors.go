package admin

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rmqgo/rmq/remoting/code"
)

// ErrNoNameServer is returned by calls that need a nameserver when
// Config.NameServers is empty.
var ErrNoNameServer = errors.New("admin: no name server address configured")

// ErrClusterNotFound is returned when a cluster name is not in the
// nameserver's cluster table. Its text is the Java tool's hint.
var ErrClusterNotFound = errors.New("Make sure the specified clusterName exists or the name server connected to is correct.") //nolint:staticcheck // Java's message, verbatim

// ResponseError is a response with a non-zero code.
type ResponseError struct {
	Code    int32  // response code (docs/protocol.md §2)
	Remark  string // the server's remark
	Addr    string // the server that answered
	Request int32  // the request code
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("%s to %s failed: %s (code %d)", RequestName(e.Request), e.Addr, ResponseName(e.Code), e.Code)
	if e.Remark != "" {
		msg += ": " + e.Remark
	}
	return msg
}

// IsCode reports whether err is (or wraps) a *ResponseError with code c.
func IsCode(err error, c int32) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == c
}

// RequestName returns the Apache name of a request code, or "REQUEST(n)".
func RequestName(c int32) string {
	switch c {
	case code.PutKVConfig:
		return "PUT_KV_CONFIG"
	case code.GetKVConfig:
		return "GET_KV_CONFIG"
	case code.DeleteKVConfig:
		return "DELETE_KV_CONFIG"
	case code.GetKVListByNamespace:
		return "GET_KVLIST_BY_NAMESPACE"
	case code.GetRouteInfoByTopic:
		return "GET_ROUTEINFO_BY_TOPIC"
	case code.GetBrokerClusterInfo:
		return "GET_BROKER_CLUSTER_INFO"
	case code.WipeWritePermOfBroker:
		return "WIPE_WRITE_PERM_OF_BROKER"
	case code.AddWritePermOfBroker:
		return "ADD_WRITE_PERM_OF_BROKER"
	case code.GetAllTopicListFromNameserver:
		return "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"
	case code.DeleteTopicInNamesrv:
		return "DELETE_TOPIC_IN_NAMESRV"
	case code.GetTopicsByCluster:
		return "GET_TOPICS_BY_CLUSTER"
	case code.UpdateNamesrvConfig:
		return "UPDATE_NAMESRV_CONFIG"
	case code.GetNamesrvConfig:
		return "GET_NAMESRV_CONFIG"
	case code.UpdateAndCreateTopic:
		return "UPDATE_AND_CREATE_TOPIC"
	case code.DeleteTopicInBroker:
		return "DELETE_TOPIC_IN_BROKER"
	case code.UpdateAndCreateStaticTopic:
		return "UPDATE_AND_CREATE_STATIC_TOPIC"
	case code.GetAllTopicConfig:
		return "GET_ALL_TOPIC_CONFIG"
	case code.GetTopicConfig:
		return "GET_TOPIC_CONFIG"
	case code.GetTopicStatsInfo:
		return "GET_TOPIC_STATS_INFO"
	case code.GetBrokerRuntimeInfo:
		return "GET_BROKER_RUNTIME_INFO"
	case code.UpdateBrokerConfig:
		return "UPDATE_BROKER_CONFIG"
	case code.GetBrokerConfig:
		return "GET_BROKER_CONFIG"
	case code.QueryTopicConsumeByWho:
		return "QUERY_TOPIC_CONSUME_BY_WHO"
	case code.QueryMessage:
		return "QUERY_MESSAGE"
	case code.ViewMessageByID:
		return "VIEW_MESSAGE_BY_ID"
	}
	return "REQUEST(" + strconv.Itoa(int(c)) + ")"
}

// ResponseName returns the Apache name of a response code, or "CODE(n)".
func ResponseName(c int32) string {
	switch c {
	case code.Success:
		return "SUCCESS"
	case code.SystemError:
		return "SYSTEM_ERROR"
	case code.SystemBusy:
		return "SYSTEM_BUSY"
	case code.RequestCodeNotSupported:
		return "REQUEST_CODE_NOT_SUPPORTED"
	case code.ServiceNotAvailable:
		return "SERVICE_NOT_AVAILABLE"
	case code.VersionNotSupported:
		return "VERSION_NOT_SUPPORTED"
	case code.NoPermission:
		return "NO_PERMISSION"
	case code.TopicNotExist:
		return "TOPIC_NOT_EXIST"
	case code.TopicExistAlready:
		return "TOPIC_EXIST_ALREADY"
	case code.QueryNotFound:
		return "QUERY_NOT_FOUND"
	case code.SubscriptionGroupNotExist:
		return "SUBSCRIPTION_GROUP_NOT_EXIST"
	case code.InvalidParameter:
		return "INVALID_PARAMETER"
	case code.ConsumerNotOnline:
		return "CONSUMER_NOT_ONLINE"
	case code.BrokerNotExist:
		return "BROKER_NOT_EXIST"
	case code.FlowControl:
		return "FLOW_CONTROL"
	case code.NotLeaderForQueue:
		return "NOT_LEADER_FOR_QUEUE"
	case code.IllegalOperation:
		return "ILLEGAL_OPERATION"
	case code.GoAway:
		return "GO_AWAY"
	}
	return "CODE(" + strconv.Itoa(int(c)) + ")"
}
