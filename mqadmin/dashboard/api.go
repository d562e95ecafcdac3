package dashboard

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// ---- cluster ----

type brokerView struct {
	figures.BrokerRow
	Role string `json:"role"`
}

type clusterView struct {
	NameServers []string     `json:"nameServers"`
	Clusters    []string     `json:"clusters"`
	Brokers     []brokerView `json:"brokers"`
}

func (s *Server) cluster(r *request) (any, error) {
	ci, err := r.c.GetBrokerClusterInfo(r.ctx)
	if err != nil {
		return nil, err
	}
	clusters := admin.ClusterNames(ci)
	out := clusterView{NameServers: r.c.NameServers(), Clusters: clusters, Brokers: []brokerView{}}
	for _, row := range figures.BrokerRows(r.ctx, r.c, ci, clusters, s.cfg.Now()) {
		if admin.IsCode(row.Err, code.NoPermission) {
			return nil, row.Err // ACL on: the page asks for credentials
		}
		role := "SLAVE"
		if row.BrokerID == 0 {
			role = "MASTER"
		}
		if v := row.Runtime["brokerRole"]; v != "" {
			role = v
		}
		row.Runtime = nil // hundreds of keys the page does not show
		out.Brokers = append(out.Brokers, brokerView{BrokerRow: row, Role: role})
	}
	return out, nil
}

// ---- topics ----

type topicItem struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // NORMAL, RETRY, DLQ, SYSTEM, LMQ
}

func topicKind(t string) string {
	switch {
	case strings.HasPrefix(t, protocol.RetryGroupTopicPrefix):
		return "RETRY"
	case strings.HasPrefix(t, "%DLQ%"):
		return "DLQ"
	case strings.HasPrefix(t, protocol.LMQPrefix):
		return "LMQ"
	case protocol.IsSystemTopic(t) || strings.HasPrefix(t, "rmq_sys_"):
		return "SYSTEM"
	}
	return "NORMAL"
}

func (s *Server) topics(r *request) (any, error) {
	tl, err := r.c.GetAllTopicList(r.ctx)
	if err != nil {
		return nil, err
	}
	names := slices.Clone(tl.TopicList)
	slices.Sort(names)
	out := make([]topicItem, 0, len(names))
	for _, t := range names {
		out = append(out, topicItem{Name: t, Kind: topicKind(t)})
	}
	return map[string]any{"topics": out}, nil
}

type queueStat struct {
	BrokerName          string `json:"brokerName"`
	QueueID             int    `json:"queueId"`
	MinOffset           int64  `json:"minOffset"`
	MaxOffset           int64  `json:"maxOffset"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

type topicView struct {
	Topic      string                   `json:"topic"`
	Route      *protocol.TopicRouteData `json:"route"`
	Queues     []queueStat              `json:"queues"`
	StatsError string                   `json:"statsError,omitempty"`
	Groups     []string                 `json:"groups"`
	// Static is the static-topic mapping with its history; nil for a
	// topic that is not static.
	Static *figures.History `json:"static"`
}

func (s *Server) topic(r *request) (any, error) {
	topic := strings.TrimSpace(r.URL.Query().Get("topic"))
	if topic == "" {
		return nil, badRequest("topic is required")
	}
	route, err := r.c.GetTopicRoute(r.ctx, topic)
	if err != nil {
		return nil, err
	}
	v := topicView{Topic: topic, Route: route, Queues: []queueStat{}, Groups: []string{}}
	if st, err := r.c.ExamineTopicStats(r.ctx, topic); err != nil {
		v.StatsError = err.Error()
	} else {
		for _, mq := range st.OffsetTable.SortedKeys() {
			o := st.OffsetTable[mq]
			v.Queues = append(v.Queues, queueStat{mq.BrokerName, mq.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
		}
	}
	if groups, err := r.c.QueryTopicConsumeByWhoRoute(r.ctx, topic); err == nil {
		v.Groups = append(v.Groups, groups...)
		slices.Sort(v.Groups)
	}
	if isStatic(route) {
		h, _, err := figures.StaticHistory(r.ctx, r.c, topic, s.cfg.Now)
		if err != nil {
			return nil, err
		}
		v.Static = h
	}
	return v, nil
}

// isStatic: the route of a static topic carries logic-queue mappings.
func isStatic(route *protocol.TopicRouteData) bool {
	return len(route.TopicQueueMappingByBroker) > 0
}

// ---- consumer groups ----

func (s *Server) groupNames(r *request) ([]string, error) {
	tl, err := r.c.GetAllTopicList(r.ctx)
	if err != nil {
		return nil, err
	}
	groups := figures.RetryGroups(tl.TopicList)
	slices.Sort(groups)
	return slices.Compact(groups), nil
}

// groups lists the groups whose name contains ?filter= (any case), a page
// of ?limit= (default 100) from ?offset=: the figures of a group cost a
// few requests, so a page's cost does not grow with the cluster's groups.
func (s *Server) groups(r *request) (any, error) {
	q := r.URL.Query()
	offset, err := intParam(q, "offset", 0, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(q, "limit", 100, 1, 1000)
	if err != nil {
		return nil, err
	}
	names, err := s.groupNames(r)
	if err != nil {
		return nil, err
	}
	if f := strings.ToLower(strings.TrimSpace(q.Get("filter"))); f != "" {
		names = slices.DeleteFunc(names, func(g string) bool { return !strings.Contains(strings.ToLower(g), f) })
	}
	page := names[min(offset, len(names)):min(offset+limit, len(names))]
	out := make([]figures.GroupRow, 0, len(page))
	for _, g := range page {
		out = append(out, figures.GroupOf(r.ctx, r.c, g, s.log))
	}
	return map[string]any{"groups": out, "total": len(names), "offset": offset, "limit": limit}, nil
}

type groupView struct {
	Group           string                    `json:"group"`
	Progress        *figures.Progress         `json:"progress"`
	ProgressError   string                    `json:"progressError,omitempty"`
	Connection      *admin.ConsumerConnection `json:"connection"`
	ConnectionError string                    `json:"connectionError,omitempty"`
	// Versions are the connections' versions as consumerConnection
	// prints them (V5_5_0), by client id.
	Versions map[string]string `json:"versions"`
}

func (s *Server) group(r *request) (any, error) {
	group := strings.TrimSpace(r.URL.Query().Get("group"))
	if group == "" {
		return nil, badRequest("group is required")
	}
	v := groupView{Group: group, Versions: map[string]string{}}
	st, err := r.c.ExamineConsumeStats(r.ctx, "", group, "")
	if err != nil {
		if admin.IsCode(err, code.NoPermission) {
			return nil, err
		}
		v.ProgressError = err.Error()
	} else {
		p := figures.ProgressOf(st, figures.QueueAllocation(r.ctx, r.c, group, s.log))
		v.Progress = &p
	}
	if cc, err := r.c.ExamineConsumerConnection(r.ctx, group, ""); err != nil {
		v.ConnectionError = err.Error()
	} else {
		v.Connection = cc
		for _, conn := range cc.ConnectionSet {
			v.Versions[conn.ClientID] = admin.VersionDesc(conn.Version)
		}
	}
	return v, nil
}

// ---- lite topics ----

type liteRow struct {
	BrokerName string `json:"brokerName"`
	protocol.LiteTopicEntry
}

type liteParentInfo struct {
	BrokerName string                                   `json:"brokerName"`
	Info       *protocol.GetParentTopicInfoResponseBody `json:"info,omitempty"`
	Error      string                                   `json:"error,omitempty"`
}

type liteView struct {
	Parent     string           `json:"parent"`
	Brokers    []liteParentInfo `json:"brokers"`
	LiteTopics []liteRow        `json:"liteTopics"`
	// NextCursor continues the listing ("": no more pages).
	NextCursor string `json:"nextCursor"`
}

// lite pages through the lite topics of a parent over every broker of its
// route: the cursor is "brokerIndex:brokerCursor".
func (s *Server) lite(r *request) (any, error) {
	q := r.URL.Query()
	parent, group := strings.TrimSpace(q.Get("parent")), strings.TrimSpace(q.Get("group"))
	if parent == "" {
		return nil, badRequest("parent is required")
	}
	limit := 50
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 || n > 1000 {
			return nil, badRequest("limit: want 1..1000")
		}
		limit = n
	}
	bi, inner := 0, ""
	if cur := q.Get("cursor"); cur != "" {
		i, rest, ok := strings.Cut(cur, ":")
		n, err := strconv.Atoi(i)
		if !ok || err != nil || n < 0 {
			return nil, badRequest("bad cursor %q", cur)
		}
		bi, inner = n, rest
	}
	all, err := r.c.RouteBrokers(r.ctx, parent)
	if err != nil {
		return nil, err
	}
	var brokers []admin.RouteBroker
	for _, b := range all {
		if b.Addr != "" {
			brokers = append(brokers, b)
		}
	}
	v := liteView{Parent: parent, Brokers: []liteParentInfo{}, LiteTopics: []liteRow{}}
	for _, b := range brokers {
		pi := liteParentInfo{BrokerName: b.Name}
		if info, err := r.c.GetParentTopicInfo(r.ctx, b.Addr, parent); err != nil {
			if admin.IsCode(err, code.NoPermission) {
				return nil, err
			}
			pi.Error = err.Error()
		} else {
			pi.Info = info
		}
		v.Brokers = append(v.Brokers, pi)
	}
	for bi < len(brokers) && len(v.LiteTopics) < limit {
		b := brokers[bi]
		page, err := r.c.ListLiteTopics(r.ctx, b.Addr, parent, group, inner, limit-len(v.LiteTopics))
		if err != nil {
			return nil, err
		}
		for _, e := range page.LiteTopics {
			v.LiteTopics = append(v.LiteTopics, liteRow{BrokerName: b.Name, LiteTopicEntry: e})
		}
		if page.HasMore && page.NextCursor != "" {
			inner = page.NextCursor
			if len(v.LiteTopics) >= limit {
				v.NextCursor = strconv.Itoa(bi) + ":" + inner
			}
			continue
		}
		bi, inner = bi+1, ""
		if len(v.LiteTopics) >= limit && bi < len(brokers) {
			v.NextCursor = strconv.Itoa(bi) + ":"
		}
	}
	return v, nil
}

// ---- lite group lag top-K ----

// liteLagRow is one lite topic of a lag top-K, with its broker.
type liteLagRow struct {
	BrokerName string `json:"brokerName"`
	protocol.LiteLagInfo
}

type liteLagBroker struct {
	BrokerName    string `json:"brokerName"`
	TotalLagCount int64  `json:"totalLagCount"`
	// EarliestUnconsumedTimestamp is -1 when nothing is unconsumed.
	EarliestUnconsumedTimestamp int64  `json:"earliestUnconsumedTimestamp"`
	Error                       string `json:"error,omitempty"`
}

type liteLagView struct {
	Parent                      string          `json:"parent"`
	Group                       string          `json:"group"`
	TopK                        int             `json:"topK"`
	TotalLagCount               int64           `json:"totalLagCount"`
	EarliestUnconsumedTimestamp int64           `json:"earliestUnconsumedTimestamp"`
	Brokers                     []liteLagBroker `json:"brokers"`
	// ByCount are the K lite topics with the most messages unconsumed
	// over all brokers; ByAge the K whose oldest unconsumed message is
	// the oldest.
	ByCount []liteLagRow `json:"byCount"`
	ByAge   []liteLagRow `json:"byAge"`
}

// liteLag is the lag top-K of a lite group (getLiteGroupInfo without -l:
// GET_LITE_GROUP_INFO, 200078, on every broker of the parent's route),
// merged over the brokers and cut to K.
func (s *Server) liteLag(r *request) (any, error) {
	q := r.URL.Query()
	parent, group := strings.TrimSpace(q.Get("parent")), strings.TrimSpace(q.Get("group"))
	if parent == "" || group == "" {
		return nil, badRequest("parent and group are required")
	}
	k, err := intParam(q, "topK", 10, 1, 1000)
	if err != nil {
		return nil, err
	}
	brokers, err := r.c.RouteBrokers(r.ctx, parent)
	if err != nil {
		return nil, err
	}
	v := liteLagView{Parent: parent, Group: group, TopK: k, EarliestUnconsumedTimestamp: -1,
		Brokers: []liteLagBroker{}, ByCount: []liteLagRow{}, ByAge: []liteLagRow{}}
	for _, b := range brokers {
		lb := liteLagBroker{BrokerName: b.Name, EarliestUnconsumedTimestamp: -1}
		info, err := r.c.GetLiteGroupInfo(r.ctx, b.Addr, group, "", k)
		switch {
		case admin.IsCode(err, code.NoPermission):
			return nil, err
		case err != nil:
			lb.Error = err.Error()
		case info.ParentTopic != parent:
			lb.Error = "group " + group + " is bound to " + info.ParentTopic + ", not " + parent
		default:
			lb.TotalLagCount, lb.EarliestUnconsumedTimestamp = max(info.TotalLagCount, 0), info.EarliestUnconsumedTimestamp
			v.TotalLagCount += lb.TotalLagCount
			if ts := info.EarliestUnconsumedTimestamp; ts > 0 && (v.EarliestUnconsumedTimestamp < 0 || ts < v.EarliestUnconsumedTimestamp) {
				v.EarliestUnconsumedTimestamp = ts
			}
			for _, x := range info.LagCountTopK {
				v.ByCount = append(v.ByCount, liteLagRow{b.Name, x})
			}
			for _, x := range info.LagTimestampTopK {
				v.ByAge = append(v.ByAge, liteLagRow{b.Name, x})
			}
		}
		v.Brokers = append(v.Brokers, lb)
	}
	slices.SortFunc(v.ByCount, func(x, y liteLagRow) int {
		return cmp.Or(cmp.Compare(y.LagCount, x.LagCount), cmp.Compare(x.LiteTopic, y.LiteTopic), cmp.Compare(x.BrokerName, y.BrokerName))
	})
	slices.SortFunc(v.ByAge, func(x, y liteLagRow) int {
		return cmp.Or(cmp.Compare(x.EarliestUnconsumedTimestamp, y.EarliestUnconsumedTimestamp), cmp.Compare(x.LiteTopic, y.LiteTopic), cmp.Compare(x.BrokerName, y.BrokerName))
	})
	v.ByCount, v.ByAge = v.ByCount[:min(k, len(v.ByCount))], v.ByAge[:min(k, len(v.ByAge))]
	return v, nil
}

// ---- pop ----

type popBroker struct {
	Addr   string                  `json:"addr"`
	Status *protocol.PopStatusBody `json:"status,omitempty"`
	Error  string                  `json:"error,omitempty"`
}

func (s *Server) pop(r *request) (any, error) {
	q := r.URL.Query()
	ci, err := r.c.GetBrokerClusterInfo(r.ctx)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, cl := range admin.ClusterNames(ci) {
		m, err := admin.MasterAddrs(ci, cl)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, m...)
	}
	pq := admin.PopStatusQuery{Group: strings.TrimSpace(q.Get("group")), Topic: strings.TrimSpace(q.Get("topic"))}
	out := []popBroker{}
	for _, res := range r.c.PopStatusOf(r.ctx, addrs, pq) {
		b := popBroker{Addr: res.Addr, Status: res.Status}
		if res.Err != nil {
			if admin.IsCode(res.Err, code.NoPermission) {
				return nil, res.Err
			}
			b.Error = res.Err.Error()
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(x, y popBroker) int { return cmp.Compare(x.Addr, y.Addr) })
	return map[string]any{"brokers": out}, nil
}

// ---- messages ----

type messageView struct {
	Topic          string            `json:"topic"`
	MsgID          string            `json:"msgId"`
	OffsetMsgID    string            `json:"offsetMsgId"`
	Tags           string            `json:"tags"`
	Keys           []string          `json:"keys"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	BornHost       string            `json:"bornHost"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreHost      string            `json:"storeHost"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	Properties     map[string]string `json:"properties"`
	BodySize       int               `json:"bodySize"`
	// Body is the body as text when it is valid UTF-8, cut at 4 KiB.
	Body string `json:"body"`
}

func viewOf(m *message.Message) messageView {
	body := m.Body
	if len(body) > 4096 {
		body = body[:4096]
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	return messageView{
		Topic: m.Topic, MsgID: m.ClientMsgID(), OffsetMsgID: m.OffsetMsgID(), Tags: m.Tags(), Keys: m.Keys(),
		QueueID: m.QueueID, QueueOffset: m.QueueOffset, BornHost: m.BornHost.String(), BornTimestamp: m.BornTimestamp,
		StoreHost: m.StoreHost.String(), StoreTimestamp: m.StoreTimestamp, ReconsumeTimes: m.ReconsumeTimes,
		Properties: m.Properties, BodySize: len(m.Body), Body: text,
	}
}

// messages finds messages of a topic by message id (client or offset
// id), by key, or by queue offset.
func (s *Server) messages(r *request) (any, error) {
	q := r.URL.Query()
	topic := strings.TrimSpace(q.Get("topic"))
	if topic == "" {
		return nil, badRequest("topic is required")
	}
	out := []messageView{}
	switch {
	case q.Get("id") != "":
		m, viewErr, err := r.c.QueryMessageByID(r.ctx, "", topic, strings.TrimSpace(q.Get("id")), s.cfg.Now())
		if err != nil {
			return nil, err
		}
		if m == nil {
			if viewErr != nil {
				return nil, viewErr
			}
			break
		}
		out = append(out, viewOf(m.Message))
	case q.Get("key") != "":
		res, err := r.c.QueryMessage(r.ctx, admin.QueryMessageRequest{Topic: topic, Key: strings.TrimSpace(q.Get("key")),
			MaxNum: 64, End: math.MaxInt64, IndexType: admin.IndexKeyType})
		if err != nil {
			return nil, err
		}
		for _, m := range res.Messages {
			out = append(out, viewOf(m.Message))
		}
	case q.Get("broker") != "":
		qid, err1 := strconv.Atoi(q.Get("queueId"))
		off, err2 := strconv.ParseInt(q.Get("offset"), 10, 64)
		if err1 != nil || err2 != nil {
			return nil, badRequest("broker, queueId and offset go together")
		}
		m, err := s.messageAt(r, protocol.MessageQueue{Topic: topic, BrokerName: strings.TrimSpace(q.Get("broker")), QueueID: qid}, off)
		if err != nil {
			return nil, err
		}
		if m != nil {
			out = append(out, viewOf(m))
		}
	default:
		return nil, badRequest("give id, key, or broker+queueId+offset")
	}
	return map[string]any{"messages": out}, nil
}

// messageAt reads the message at a queue offset through Config.MessageAt
// (mqadmin's queryMsgByOffset pull).
func (s *Server) messageAt(r *request, mq protocol.MessageQueue, offset int64) (*message.Message, error) {
	if s.cfg.MessageAt == nil {
		return nil, &httpError{status: http.StatusNotImplemented, msg: "lookup by queue offset is not configured"}
	}
	cred := s.cfg.Credentials
	s.mu.Lock()
	if r.sess.cred != nil {
		cred = r.sess.cred
	}
	s.mu.Unlock()
	return s.cfg.MessageAt(r.ctx, cred, mq, offset)
}

func (s *Server) trace(r *request) (any, error) {
	q := r.URL.Query()
	id := strings.TrimSpace(q.Get("id"))
	if id == "" {
		return nil, badRequest("id is required")
	}
	traceTopic := protocol.TraceTopic
	if t := strings.TrimSpace(q.Get("traceTopic")); t != "" {
		traceTopic = t
	}
	res, err := r.c.QueryMessage(r.ctx, admin.QueryMessageRequest{Topic: traceTopic, Key: id, MaxNum: 64, End: math.MaxInt64})
	if err != nil {
		return nil, err
	}
	views := []figures.TraceView{}
	for _, m := range res.Messages {
		vs, err := figures.DecodeTraceViews(id, string(m.Body), m.BornHost.Addr().String(), s.cfg.Now())
		if err != nil {
			return nil, err
		}
		views = append(views, vs...)
	}
	return map[string]any{"traces": views}, nil
}

// ---- actions ----

func (s *Server) createTopic(r *request) (any, error) {
	var in struct {
		Cluster     string `json:"cluster"`
		Topic       string `json:"topic"`
		ReadQueues  int    `json:"readQueues"`
		WriteQueues int    `json:"writeQueues"`
		Perm        int    `json:"perm"`
		Order       bool   `json:"order"`
	}
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	in.Cluster, in.Topic = strings.TrimSpace(in.Cluster), strings.TrimSpace(in.Topic)
	if in.Cluster == "" || in.Topic == "" {
		return nil, badRequest("cluster and topic are required")
	}
	tc := protocol.NewTopicConfig(in.Topic)
	if in.ReadQueues > 0 {
		tc.ReadQueueNums = in.ReadQueues
	}
	if in.WriteQueues > 0 {
		tc.WriteQueueNums = in.WriteQueues
	}
	if in.Perm > 0 {
		tc.Perm = in.Perm
	}
	tc.Order = in.Order
	addrs, err := r.c.CreateTopicInCluster(r.ctx, in.Cluster, tc, "")
	if err != nil {
		return nil, err
	}
	return map[string]any{"topic": in.Topic, "brokers": addrs}, nil
}

func (s *Server) createGroup(r *request) (any, error) {
	var in struct {
		Cluster string `json:"cluster"`
		Group   string `json:"group"`
	}
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	in.Cluster, in.Group = strings.TrimSpace(in.Cluster), strings.TrimSpace(in.Group)
	if in.Cluster == "" || in.Group == "" {
		return nil, badRequest("cluster and group are required")
	}
	masters, err := r.c.ClusterMasters(r.ctx, in.Cluster)
	if err != nil {
		return nil, err
	}
	for _, addr := range masters {
		if err := r.c.CreateSubscriptionGroup(r.ctx, addr, admin.NewSubscriptionGroupConfig(in.Group)); err != nil {
			return nil, err
		}
	}
	return map[string]any{"group": in.Group, "brokers": masters}, nil
}

// resetRow is a queue's offset after a reset (or, for a reset per queue,
// the offset asked for).
type resetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Offset     int64  `json:"offset"`
}

// resetOffset is resetOffsetByTime: through the online clients, else (no
// client online) by committing the offsets as the old command does.
func (s *Server) resetOffset(r *request) (any, error) {
	var in struct {
		Group     string `json:"group"`
		Topic     string `json:"topic"`
		Timestamp int64  `json:"timestamp"`
		Force     bool   `json:"force"`
	}
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	in.Group, in.Topic = strings.TrimSpace(in.Group), strings.TrimSpace(in.Topic)
	if in.Group == "" || in.Topic == "" {
		return nil, badRequest("group and topic are required")
	}
	rows := []resetRow{}
	batches, err := r.c.ResetOffsetByTimestamp(r.ctx, "", in.Topic, in.Group, in.Timestamp, in.Force)
	if admin.IsCode(err, code.ConsumerNotOnline) {
		stats, err := r.c.ResetOffsetByTimestampOld(r.ctx, "", in.Group, in.Topic, in.Timestamp, in.Force)
		if err != nil {
			return nil, err
		}
		for _, st := range stats {
			rows = append(rows, resetRow{st.BrokerName, st.QueueID, st.RollbackOffset})
		}
		return map[string]any{"offsets": rows, "viaClients": false}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, b := range batches {
		for _, mq := range b.SortedKeys() {
			rows = append(rows, resetRow{mq.BrokerName, mq.QueueID, b[mq]})
		}
	}
	return map[string]any{"offsets": rows, "viaClients": true}, nil
}

// resetOffsetByQueue is resetOffsetByTime -b -q -o for each queue given
// (Java's resetOffsetByQueueId: the offset committed, then the broker
// told so that it reaches online clients). An offset outside the queue's
// [min, max] is refused before anything changes.
func (s *Server) resetOffsetByQueue(r *request) (any, error) {
	var in struct {
		Group  string     `json:"group"`
		Topic  string     `json:"topic"`
		Queues []resetRow `json:"queues"`
	}
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	in.Group, in.Topic = strings.TrimSpace(in.Group), strings.TrimSpace(in.Topic)
	if in.Group == "" || in.Topic == "" || len(in.Queues) == 0 {
		return nil, badRequest("group, topic and queues are required")
	}
	if len(in.Queues) > 4096 {
		return nil, badRequest("at most 4096 queues")
	}
	route, err := r.c.GetTopicRoute(r.ctx, in.Topic)
	if err != nil {
		return nil, err
	}
	st, err := r.c.ExamineTopicStats(r.ctx, in.Topic)
	if err != nil {
		return nil, err
	}
	addrs := map[string]string{}
	for _, bd := range route.BrokerDatas {
		addrs[bd.BrokerName] = bd.BrokerAddrs[protocol.MasterID]
	}
	for _, x := range in.Queues {
		mq := protocol.MessageQueue{Topic: in.Topic, BrokerName: x.BrokerName, QueueID: x.QueueID}
		o, ok := st.OffsetTable[mq]
		if !ok || addrs[x.BrokerName] == "" {
			return nil, badRequest("%s has no queue %d on broker %s with a master", in.Topic, x.QueueID, x.BrokerName)
		}
		if x.Offset < o.MinOffset || x.Offset > o.MaxOffset {
			return nil, badRequest("offset %d of %s[%d] is outside [%d, %d]", x.Offset, x.BrokerName, x.QueueID, o.MinOffset, o.MaxOffset)
		}
	}
	rows := []resetRow{}
	for _, x := range in.Queues {
		_, err := r.c.ResetOffsetByQueueID(r.ctx, addrs[x.BrokerName], in.Group, in.Topic, x.QueueID, x.Offset)
		// CONSUMER_NOT_ONLINE (a broker resetting only through clients,
		// none online) comes after the commit: the offset did move.
		if err != nil && !admin.IsCode(err, code.ConsumerNotOnline) {
			return nil, fmt.Errorf("reset %s[%d] (%d queue(s) before it were reset): %w", x.BrokerName, x.QueueID, len(rows), err)
		}
		rows = append(rows, x)
	}
	return map[string]any{"offsets": rows}, nil
}
