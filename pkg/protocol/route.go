package protocol

// Permission bits of a topic or broker (docs/protocol.md §6.8).
const (
	PermPriority = 8
	PermRead     = 4
	PermWrite    = 2
	PermInherit  = 1
)

// PermString renders perm as the Java tool does: R, W, X or '-'.
func PermString(perm int) string {
	b := []byte("---")
	if perm&PermRead != 0 {
		b[0] = 'R'
	}
	if perm&PermWrite != 0 {
		b[1] = 'W'
	}
	if perm&PermInherit != 0 {
		b[2] = 'X'
	}
	return string(b)
}

// MasterID is the broker id of a master.
const MasterID = 0

// DataVersion versions a broker's topic table.
type DataVersion struct {
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
}

// Equal compares all three fields, as Java's DataVersion.equals does.
func (d DataVersion) Equal(o DataVersion) bool {
	return d.Counter == o.Counter && d.StateVersion == o.StateVersion && d.Timestamp == o.Timestamp
}

// BrokerData is one broker name (a master and its slaves) in a route.
type BrokerData struct {
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	BrokerName         string           `json:"brokerName"`
	Cluster            string           `json:"cluster"`
	EnableActingMaster bool             `json:"enableActingMaster"`
	ZoneName           string           `json:"zoneName,omitempty"`
}

// QueueData is one broker's queues of a topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	Perm           int    `json:"perm"`
	ReadQueueNums  int    `json:"readQueueNums"`
	TopicSysFlag   int    `json:"topicSysFlag"`
	WriteQueueNums int    `json:"writeQueueNums"`
}

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC body.
type TopicRouteData struct {
	BrokerDatas               []BrokerData                     `json:"brokerDatas"`
	FilterServerTable         map[string][]string              `json:"filterServerTable"`
	OrderTopicConf            string                           `json:"orderTopicConf,omitempty"`
	QueueDatas                []QueueData                      `json:"queueDatas"`
	TopicQueueMappingByBroker map[string]TopicQueueMappingInfo `json:"topicQueueMappingByBroker,omitempty"`
}

// HasMaster reports whether the route names a master address for the
// broker: producers write only to brokers that have one (Java's
// topicRouteData2TopicPublishInfo).
func (rd *TopicRouteData) HasMaster(brokerName string) bool {
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName == brokerName {
			return bd.BrokerAddrs[MasterID] != ""
		}
	}
	return false
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO body.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// TopicList is the body of the topic listing requests.
type TopicList struct {
	BrokerAddr string   `json:"brokerAddr,omitempty"`
	TopicList  []string `json:"topicList"`
}

// KVTable is a string map body ({"table":{...}}).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// BrokerMemberGroup is the GET_BROKER_MEMBER_GROUP body content.
type BrokerMemberGroup struct {
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
	BrokerName  string           `json:"brokerName"`
	Cluster     string           `json:"cluster"`
}

// GetBrokerMemberGroupResponseBody wraps BrokerMemberGroup.
type GetBrokerMemberGroupResponseBody struct {
	BrokerMemberGroup BrokerMemberGroup `json:"brokerMemberGroup"`
}
