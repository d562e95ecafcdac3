// Package processor answers nameserver requests (docs/protocol.md §3.2). Handle
// is a remoting.Handler; it needs the channel only for REGISTER_BROKER (so
// the broker is dropped when its connection closes), so tests call it
// directly with a nil channel.
package processor

import (
	"context"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/kvconfig"
	"github.com/rmqgo/rmq/namesrv/routeinfo"
)

// zoneNameKey is the extFields key a broker puts its zone in (MixAll.ZONE_NAME).
const zoneNameKey = "__ZONE_NAME"

// Options wires a Processor.
type Options struct {
	Config *nsconfig.Store
	Routes *routeinfo.Manager
	KV     *kvconfig.Store
	Logger *slog.Logger
	// Clock defaults to time.Now (wait-for-service window).
	Clock func() time.Time
	// OnConfigUpdate runs after UPDATE_NAMESRV_CONFIG installed next, e.g.
	// to persist it and apply runtime switches.
	OnConfigUpdate func(next *nsconfig.Config)
}

type handlerFunc func(ch *remoting.Channel, req *remoting.Command) *remoting.Command

// Processor dispatches nameserver request codes.
type Processor struct {
	cfg      *nsconfig.Store
	routes   *routeinfo.Manager
	kv       *kvconfig.Store
	log      *slog.Logger
	clock    func() time.Time
	started  time.Time
	onUpdate func(*nsconfig.Config)
	handlers map[int32]handlerFunc
}

// New builds a Processor.
func New(o Options) *Processor {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	p := &Processor{cfg: o.Config, routes: o.Routes, kv: o.KV, log: o.Logger, clock: o.Clock, started: o.Clock(), onUpdate: o.OnConfigUpdate}
	p.handlers = map[int32]handlerFunc{
		code.PutKVConfig:                   p.putKVConfig,
		code.GetKVConfig:                   p.getKVConfig,
		code.DeleteKVConfig:                p.deleteKVConfig,
		code.GetKVListByNamespace:          p.getKVListByNamespace,
		code.RegisterBroker:                p.registerBroker,
		code.UnregisterBroker:              p.unregisterBroker,
		code.BrokerHeartbeat:               p.brokerHeartbeat,
		code.QueryDataVersion:              p.queryDataVersion,
		code.GetRouteInfoByTopic:           p.getRouteInfoByTopic,
		code.GetBrokerClusterInfo:          p.getBrokerClusterInfo,
		code.WipeWritePermOfBroker:         p.wipeWritePerm,
		code.AddWritePermOfBroker:          p.addWritePerm,
		code.GetAllTopicListFromNameserver: p.getAllTopicList,
		code.DeleteTopicInNamesrv:          p.deleteTopic,
		code.RegisterTopicInNamesrv:        p.registerTopic,
		code.GetTopicsByCluster:            p.getTopicsByCluster,
		code.GetSystemTopicListFromNS:      p.getSystemTopicList,
		code.GetUnitTopicList:              p.unitTopicList(func(f int) bool { return f&routeinfo.FlagUnit != 0 }),
		code.GetHasUnitSubTopicList:        p.unitTopicList(func(f int) bool { return f&routeinfo.FlagUnitSub != 0 }),
		code.GetHasUnitSubUnUnitTopicList: p.unitTopicList(func(f int) bool {
			return f&routeinfo.FlagUnit == 0 && f&routeinfo.FlagUnitSub != 0
		}),
		code.UpdateNamesrvConfig:  p.updateConfig,
		code.GetNamesrvConfig:     p.getConfig,
		code.GetBrokerMemberGroup: p.getBrokerMemberGroup,
	}
	return p
}

// Codes lists the request codes Handle serves, sorted.
func (p *Processor) Codes() []int32 {
	codes := make([]int32, 0, len(p.handlers))
	for c := range p.handlers {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

// Handle answers one request. It never returns an error: every failure is a
// response code with a remark. ch may be nil.
func (p *Processor) Handle(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h := p.handlers[req.Code]
	if h == nil {
		return remoting.NewResponse(req, code.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code)), nil
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("request", "code", req.Code, "remote", remoteOf(ch), "ext", req.ExtFields)
	}
	return h(ch, req), nil
}

func remoteOf(ch *remoting.Channel) string {
	if ch == nil {
		return ""
	}
	return ch.RemoteAddr()
}

func success(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, code.Success, "")
}

func fail(req *remoting.Command, c int32, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(req, c, fmt.Sprintf(format, args...))
}

func withBody(resp *remoting.Command, body []byte) *remoting.Command {
	resp.Body = body
	return resp
}

// invalid answers INVALID_PARAMETER for a header that failed validation.
func invalid(req *remoting.Command, err error) *remoting.Command {
	return fail(req, code.InvalidParameter, "%v", err)
}

// present returns a header field that must be sent but may be empty (Java
// only requires it non-null).
func present(f *protocol.Fields, req *remoting.Command, key string) (string, error) {
	if f.Err() != nil {
		return "", f.Err()
	}
	v, ok := req.ExtFields[key]
	if !ok {
		return "", fmt.Errorf("the custom field <%s> is null", key)
	}
	return v, nil
}

// ---- KV config ----

func (p *Processor) putKVConfig(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	ns, key := f.Str("namespace"), f.Str("key")
	value, err := present(f, req, "value")
	if err != nil {
		return invalid(req, err)
	}
	if err := p.kv.Put(ns, key, value); err != nil {
		p.log.Error("put kv config failed", "namespace", ns, "key", key, "err", err)
		return fail(req, code.SystemError, "put kv config failed: %v", err)
	}
	return success(req)
}

func (p *Processor) getKVConfig(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	ns, key := f.Str("namespace"), f.Str("key")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	v, ok := p.kv.Get(ns, key)
	if !ok {
		return fail(req, code.QueryNotFound, "No config item, Namespace: %s Key: %s", ns, key)
	}
	resp := success(req)
	resp.SetExt("value", v)
	return resp
}

func (p *Processor) deleteKVConfig(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	ns, key := f.Str("namespace"), f.Str("key")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	if err := p.kv.Delete(ns, key); err != nil {
		p.log.Error("delete kv config failed", "namespace", ns, "key", key, "err", err)
		return fail(req, code.SystemError, "delete kv config failed: %v", err)
	}
	return success(req)
}

func (p *Processor) getKVListByNamespace(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	ns := f.Str("namespace")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	table, ok := p.kv.List(ns)
	if !ok {
		return fail(req, code.QueryNotFound, "No config item, Namespace: %s", ns)
	}
	return withBody(success(req), protocol.MustMarshal(protocol.KVTable{Table: table}))
}

// ---- broker registration ----

func (p *Processor) registerBroker(ch *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	r := routeinfo.Registration{
		BrokerName: f.Str("brokerName"),
		BrokerAddr: f.Str("brokerAddr"),
		Cluster:    f.Str("clusterName"),
		BrokerID:   f.Int64("brokerId"),
		ZoneName:   req.Ext(zoneNameKey),
	}
	timeoutMs := f.OptInt64("heartbeatTimeoutMillis", 0)
	compressed := f.OptBool("compressed", false)
	bodyCrc := f.OptInt64("bodyCrc32", 0)
	if req.Ext("enableActingMaster") != "" {
		v := f.OptBool("enableActingMaster", false)
		r.EnableActingMaster = &v
	}
	ha, err := present(f, req, "haServerAddr")
	if err != nil {
		return invalid(req, err)
	}
	if r.BrokerID < 0 {
		return fail(req, code.InvalidParameter, "the custom field <brokerId> must not be negative: %d", r.BrokerID)
	}
	if timeoutMs < 0 {
		return fail(req, code.InvalidParameter, "the custom field <heartbeatTimeoutMillis> must not be negative: %d", timeoutMs)
	}
	r.HAServerAddr = ha
	r.Timeout = time.Duration(timeoutMs) * time.Millisecond

	if bodyCrc != 0 {
		// Java: UtilAll.crc32 = CRC32 & 0x7FFFFFFF, compared with the header.
		if got := int64(crc32.ChecksumIEEE(req.Body) & 0x7FFFFFFF); got != bodyCrc {
			p.log.Warn("register broker: crc32 not match", "remote", remoteOf(ch), "brokerAddr", r.BrokerAddr, "header", bodyCrc, "body", got)
			return fail(req, code.SystemError, "crc32 not match")
		}
	}
	body, err := decodeRegisterBody(req.Body, compressed, req.Version)
	if err != nil {
		p.log.Warn("register broker: bad body", "remote", remoteOf(ch), "brokerAddr", r.BrokerAddr, "compressed", compressed, "err", err)
		return fail(req, code.InvalidParameter, "failed to decode RegisterBrokerBody: %v", err)
	}
	r.DataVersion = body.dataVersion
	r.TopicConfigs = body.topics
	r.MappingInfos = body.mappings
	r.FilterServers = body.filterServers
	if ch != nil {
		r.Conn = ch
	}

	res := p.routes.RegisterBroker(r)
	resp := success(req)
	if res.HAServerAddr != "" {
		resp.SetExt("haServerAddr", res.HAServerAddr)
	}
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr)
	}
	if p.cfg.Get().ReturnOrderTopicConfigToBroker {
		if table, ok := p.kv.List(kvconfig.NamespaceOrderTopicConfig); ok {
			resp.Body = protocol.MustMarshal(protocol.KVTable{Table: table})
		}
	}
	return resp
}

func (p *Processor) unregisterBroker(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	u := routeinfo.Unregistration{
		BrokerName: f.Str("brokerName"),
		BrokerAddr: f.Str("brokerAddr"),
		Cluster:    f.Str("clusterName"),
		BrokerID:   f.Int64("brokerId"),
	}
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	p.routes.UnregisterBroker(u)
	return success(req)
}

func (p *Processor) brokerHeartbeat(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	cluster, addr := f.Str("clusterName"), f.Str("brokerAddr")
	f.Str("brokerName")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	if !p.routes.Touch(cluster, addr) {
		p.log.Debug("heartbeat from unregistered broker", "cluster", cluster, "brokerAddr", addr)
	}
	return success(req)
}

func (p *Processor) queryDataVersion(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	f.Str("brokerName")
	addr, cluster := f.Str("brokerAddr"), f.Str("clusterName")
	f.Int64("brokerId")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	var dv protocol.DataVersion
	if bad := jsonBody(req, "DataVersion", &dv); bad != nil {
		return bad
	}
	changed, ours := p.routes.QueryDataVersion(cluster, addr, dv)
	resp := success(req)
	resp.SetExt("changed", fmt.Sprint(changed))
	if ours != nil {
		resp.Body = protocol.MustMarshal(*ours)
	}
	return resp
}

// ---- routes and lists ----

func (p *Processor) getRouteInfoByTopic(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	f.OptBool("acceptStandardJsonOnly", false) // we always answer standard JSON
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	cfg := p.cfg.Get()
	if cfg.NeedWaitForService && p.clock().Sub(p.started) < time.Duration(cfg.WaitSecondsForService)*time.Second {
		return fail(req, code.SystemError, "name server not ready")
	}
	route, ok := p.routes.RouteJSON(topic)
	if !ok {
		return fail(req, code.TopicNotExist, "No topic route info in name server for the topic: %s", topic)
	}
	if cfg.OrderMessageEnable {
		if conf, ok := p.kv.Get(kvconfig.NamespaceOrderTopicConfig, topic); ok {
			return withBody(success(req), route.WithOrderTopicConf(conf))
		}
	}
	return withBody(success(req), route.Bytes())
}

func (p *Processor) getBrokerClusterInfo(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	return withBody(success(req), protocol.MustMarshal(p.routes.ClusterInfo()))
}

func (p *Processor) wipeWritePerm(ch *remoting.Channel, req *remoting.Command) *remoting.Command {
	return p.changeWritePerm(ch, req, "wipe", p.routes.WipeWritePerm)
}

func (p *Processor) addWritePerm(ch *remoting.Channel, req *remoting.Command) *remoting.Command {
	return p.changeWritePerm(ch, req, "add", p.routes.AddWritePerm)
}

// changeWritePerm applies change (wipe or add, as verb says) to the write
// permission of the -brokerName broker's topics and answers how many
// topics it changed in <verb>TopicCount.
func (p *Processor) changeWritePerm(ch *remoting.Channel, req *remoting.Command, verb string, change func(brokerName string) int) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	name := f.Str("brokerName")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	n := change(name)
	p.log.Info(verb+" write perm of broker", "brokerName", name, "remote", remoteOf(ch), "topics", n)
	resp := success(req)
	resp.SetExt(verb+"TopicCount", fmt.Sprint(n))
	return resp
}

// jsonBody decodes req's JSON body, a what, into v; it returns the
// INVALID_PARAMETER answer for a missing or bad body, else nil.
func jsonBody(req *remoting.Command, what string, v any) *remoting.Command {
	if len(req.Body) == 0 {
		return fail(req, code.InvalidParameter, "request body (%s) is empty", what)
	}
	if err := protocol.Unmarshal(req.Body, v); err != nil {
		return fail(req, code.InvalidParameter, "bad %s body: %v", what, err)
	}
	return nil
}

func topicListBody(topics []string) []byte {
	return protocol.MustMarshal(protocol.TopicList{TopicList: topics})
}

func (p *Processor) getAllTopicList(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if !p.cfg.Get().EnableAllTopicList {
		return fail(req, code.SystemError, "disable")
	}
	return withBody(success(req), topicListBody(p.routes.AllTopics()))
}

func (p *Processor) deleteTopic(ch *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	cluster := f.OptStr("clusterName", "")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	removed := p.routes.DeleteTopic(topic, cluster)
	p.log.Info("delete topic in namesrv", "topic", topic, "cluster", cluster, "remote", remoteOf(ch), "removed", removed)
	return success(req)
}

func (p *Processor) registerTopic(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	var rd protocol.TopicRouteData
	if bad := jsonBody(req, "TopicRouteData", &rd); bad != nil {
		return bad
	}
	if err := p.routes.RegisterTopic(topic, rd.QueueDatas); err != nil {
		// Apache logs and still answers success.
		p.log.Warn("register topic ignored", "topic", topic, "err", err)
	}
	return success(req)
}

func (p *Processor) getTopicsByCluster(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if !p.cfg.Get().EnableTopicList {
		return fail(req, code.SystemError, "disable")
	}
	f := protocol.FieldsOf(req.ExtFields)
	cluster := f.Str("cluster")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	return withBody(success(req), topicListBody(p.routes.TopicsByCluster(cluster)))
}

func (p *Processor) getSystemTopicList(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	return withBody(success(req), protocol.MustMarshal(p.routes.SystemTopics()))
}

func (p *Processor) unitTopicList(keep func(int) bool) handlerFunc {
	return func(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
		if !p.cfg.Get().EnableTopicList {
			return fail(req, code.SystemError, "disable")
		}
		return withBody(success(req), topicListBody(p.routes.TopicsWithSysFlag(keep)))
	}
}

func (p *Processor) getBrokerMemberGroup(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	cluster, name := f.Str("clusterName"), f.Str("brokerName")
	if err := f.Err(); err != nil {
		return invalid(req, err)
	}
	body := protocol.GetBrokerMemberGroupResponseBody{BrokerMemberGroup: p.routes.BrokerMemberGroup(cluster, name)}
	return withBody(success(req), protocol.MustMarshal(body))
}

// ---- configuration ----

func (p *Processor) getConfig(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	return withBody(success(req), []byte(p.cfg.Get().Properties()))
}

func (p *Processor) updateConfig(ch *remoting.Channel, req *remoting.Command) *remoting.Command {
	if len(req.Body) == 0 {
		return success(req)
	}
	props, err := config.ParseProperties(req.Body)
	if err != nil {
		return fail(req, code.InvalidParameter, "bad properties body: %v", err)
	}
	cur := p.cfg.Get()
	keys := slices.Sorted(maps.Keys(props))
	var black, unknown []string
	for _, k := range keys {
		switch {
		case cur.BlackListed(k):
			black = append(black, k)
		case !nsconfig.Known(k):
			unknown = append(unknown, k)
		}
	}
	if len(black) > 0 {
		p.log.Warn("update namesrv config refused: black-listed keys", "keys", black, "remote", remoteOf(ch))
		return fail(req, code.NoPermission, "Can not update config in black list: %s", strings.Join(black, ", "))
	}
	if len(unknown) > 0 {
		p.log.Warn("update namesrv config refused: unknown keys", "keys", unknown, "remote", remoteOf(ch))
		return fail(req, code.NoPermission, "Can not update unknown config: %s", strings.Join(unknown, ", "))
	}
	next, err := p.cfg.Update(props)
	if err != nil {
		return fail(req, code.InvalidParameter, "bad config value: %v", err)
	}
	p.log.Info("namesrv config updated", "changes", props, "remote", remoteOf(ch))
	if none := nsconfig.NoEffectSet(keys); len(none) > 0 {
		p.log.Warn("accepted with no effect: "+strings.Join(none, ", "), "by", "updateNamesrvConfig", "remote", remoteOf(ch))
	}
	if p.onUpdate != nil {
		p.onUpdate(next)
	}
	return success(req)
}
