package protocol

// Lite-topic admin bodies (docs/lite-topics.md §7), in the fastjson dialect:
// fields in alphabetical key order, null values omitted.

// LiteClientGroup is ClientGroup: one subscriber of a lite topic.
type LiteClientGroup struct {
	ClientID string `json:"clientId"`
	Group    string `json:"group"`
}

// LiteOffsetWrapper is OffsetWrapper as GET_LITE_GROUP_INFO fills it.
type LiteOffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
	PullOffset     int64 `json:"pullOffset"`
}

// LiteLagInfo is one entry of a lag top-K.
type LiteLagInfo struct {
	EarliestUnconsumedTimestamp int64  `json:"earliestUnconsumedTimestamp"`
	LagCount                    int64  `json:"lagCount"`
	LiteTopic                   string `json:"liteTopic"`
}

// GetBrokerLiteInfoResponseBody answers GET_BROKER_LITE_INFO (200074).
type GetBrokerLiteInfoResponseBody struct {
	CqTableSize           int                 `json:"cqTableSize"`
	CurrentLmqNum         int                 `json:"currentLmqNum"`
	EventMapSize          int                 `json:"eventMapSize"`
	GroupMeta             map[string][]string `json:"groupMeta,omitempty"`
	LiteSubscriptionCount int                 `json:"liteSubscriptionCount"`
	MaxLmqNum             int                 `json:"maxLmqNum"`
	OffsetTableSize       int                 `json:"offsetTableSize"`
	OrderInfoCount        int                 `json:"orderInfoCount"`
	StoreType             string              `json:"storeType,omitempty"`
	TopicMeta             map[string]int      `json:"topicMeta,omitempty"`
}

// GetParentTopicInfoResponseBody answers GET_PARENT_TOPIC_INFO (200075).
type GetParentTopicInfoResponseBody struct {
	Groups         []string `json:"groups,omitempty"`
	LiteTopicCount int      `json:"liteTopicCount"`
	LmqNum         int      `json:"lmqNum"`
	Topic          string   `json:"topic"`
	TTL            int      `json:"ttl"`
}

// GetLiteTopicInfoResponseBody answers GET_LITE_TOPIC_INFO (200076).
type GetLiteTopicInfoResponseBody struct {
	LiteTopic        string            `json:"liteTopic"`
	ParentTopic      string            `json:"parentTopic"`
	ShardingToBroker bool              `json:"shardingToBroker"`
	Subscriber       []LiteClientGroup `json:"subscriber,omitempty"`
	TopicOffset      *TopicOffset      `json:"topicOffset,omitempty"`
}

// GetLiteClientInfoResponseBody answers GET_LITE_CLIENT_INFO (200077).
type GetLiteClientInfoResponseBody struct {
	ClientID        string   `json:"clientId"`
	Group           string   `json:"group"`
	LastAccessTime  int64    `json:"lastAccessTime"`
	LastConsumeTime int64    `json:"lastConsumeTime"`
	LiteTopicCount  int      `json:"liteTopicCount"`
	LiteTopicSet    []string `json:"liteTopicSet,omitempty"`
	ParentTopic     string   `json:"parentTopic"`
}

// GetLiteGroupInfoResponseBody answers GET_LITE_GROUP_INFO (200078).
type GetLiteGroupInfoResponseBody struct {
	EarliestUnconsumedTimestamp int64              `json:"earliestUnconsumedTimestamp"`
	Group                       string             `json:"group"`
	LagCountTopK                []LiteLagInfo      `json:"lagCountTopK,omitempty"`
	LagTimestampTopK            []LiteLagInfo      `json:"lagTimestampTopK,omitempty"`
	LiteTopic                   string             `json:"liteTopic,omitempty"`
	LiteTopicOffsetWrapper      *LiteOffsetWrapper `json:"liteTopicOffsetWrapper,omitempty"`
	ParentTopic                 string             `json:"parentTopic"`
	TotalLagCount               int64              `json:"totalLagCount"`
}

// LiteTopicGroupLag is one group's progress on a lite topic (our listing).
type LiteTopicGroupLag struct {
	ConsumerOffset int64  `json:"consumerOffset"` // -1: the group never consumed it
	Group          string `json:"group"`
	Lag            int64  `json:"lag"`
}

// LiteTopicEntry is one lite topic of a parent (our listing).
type LiteTopicEntry struct {
	Groups              []LiteTopicGroupLag `json:"groups,omitempty"`
	LastUpdateTimestamp int64               `json:"lastUpdateTimestamp"`
	LiteTopic           string              `json:"liteTopic"`
	MaxOffset           int64               `json:"maxOffset"`
	MinOffset           int64               `json:"minOffset"`
}

// ListLiteTopicsResponseBody answers our LIST_LITE_TOPICS: one page of a
// parent's lite topics in name order; pass NextCursor as the next request's
// cursor while HasMore.
type ListLiteTopicsResponseBody struct {
	HasMore     bool             `json:"hasMore"`
	LiteTopics  []LiteTopicEntry `json:"liteTopics"`
	NextCursor  string           `json:"nextCursor,omitempty"`
	ParentTopic string           `json:"parentTopic"`
	Total       int              `json:"total"`
}

// LiteSubscriptionCtlBody is LiteSubscriptionCtlRequestBody, the
// LITE_SUBSCRIPTION_CTL body.
type LiteSubscriptionCtlBody struct {
	SubscriptionSet []LiteSubscriptionDTO `json:"subscriptionSet"`
}

// LiteSubscriptionDTO is one subscription change of a consumer client.
type LiteSubscriptionDTO struct {
	Action       string            `json:"action"`
	ClientID     string            `json:"clientId"`
	Group        string            `json:"group"`
	LiteTopicSet []string          `json:"liteTopicSet"`
	OffsetOption *LiteOffsetOption `json:"offsetOption,omitempty"`
	Topic        string            `json:"topic"`
	Version      int64             `json:"version"`
}

// LiteOffsetOption is the OffsetOption of a LiteSubscriptionDTO: where a
// newly subscribed lite topic starts (Type POLICY, OFFSET or TAIL_N).
type LiteOffsetOption struct {
	Type  string `json:"type"`
	Value int64  `json:"value"`
}
