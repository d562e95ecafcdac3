package protocol

// Static-topic mapping model (docs/static-topics.md §2).

// MappingScopeGlobal is the default mapping scope.
const MappingScopeGlobal = "__global__"

// LogicQueueMappingItem is one segment of a logic queue.
type LogicQueueMappingItem struct {
	Bname       string `json:"bname"`
	EndOffset   int64  `json:"endOffset"`
	Gen         int    `json:"gen"`
	LogicOffset int64  `json:"logicOffset"`
	QueueID     int    `json:"queueId"`
	StartOffset int64  `json:"startOffset"`
	TimeOfEnd   int64  `json:"timeOfEnd"`
	TimeOfStart int64  `json:"timeOfStart"`
}

// TopicQueueMappingInfo is what nameservers and clients see of a broker's
// mapping of one topic.
type TopicQueueMappingInfo struct {
	Bname       string      `json:"bname"`
	CurrIDMap   map[int]int `json:"currIdMap"`
	Dirty       bool        `json:"dirty"`
	Epoch       int64       `json:"epoch"`
	Scope       string      `json:"scope"`
	Topic       string      `json:"topic"`
	TotalQueues int         `json:"totalQueues"`
}

// TopicQueueMappingDetail is what a broker stores: the info plus the item
// lists of every logic queue it hosts.
type TopicQueueMappingDetail struct {
	Bname        string                          `json:"bname"`
	CurrIDMap    map[int]int                     `json:"currIdMap"`
	Dirty        bool                            `json:"dirty"`
	Epoch        int64                           `json:"epoch"`
	HostedQueues map[int][]LogicQueueMappingItem `json:"hostedQueues"`
	Scope        string                          `json:"scope"`
	Topic        string                          `json:"topic"`
	TotalQueues  int                             `json:"totalQueues"`
}

// Info derives the info registered with nameservers: currIdMap maps every
// logic queue this broker leads (its list's last item is on this broker) to
// the leader item's physical queue id.
func (d TopicQueueMappingDetail) Info() TopicQueueMappingInfo {
	curr := make(map[int]int)
	for lq, items := range d.HostedQueues {
		if n := len(items); n > 0 && items[n-1].Bname == d.Bname {
			curr[lq] = items[n-1].QueueID
		}
	}
	return TopicQueueMappingInfo{Bname: d.Bname, CurrIDMap: curr, Dirty: d.Dirty, Epoch: d.Epoch, Scope: d.Scope, Topic: d.Topic, TotalQueues: d.TotalQueues}
}
