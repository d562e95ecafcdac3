package admin

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/brokerstats"
	"github.com/rmqgo/rmq/broker/processor"
	pcfg "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// RuntimeInfo builds the GET_BROKER_RUNTIME_INFO table: every key Java's
// AdminBrokerProcessor.prepareRuntimeInfo and the message store produce, so
// mqadmin clusterList/brokerStatus parse it. Store-owned keys default to
// "no traffic" values and are overridden by Deps.Runtime.
func (p *Processor) RuntimeInfo() map[string]string {
	cfg := p.d.Config.Get()
	now := time.Now()
	boot := p.d.BootTime
	m := map[string]string{}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }

	// MessageStore.getRuntimeInfo / StoreStatsService.
	m["bootTimestamp"] = i64(boot.UnixMilli())
	m["runtime"] = formatRuntime(now.Sub(boot))
	m["putMessageEntireTimeMax"] = "0"
	m["putMessageTimesTotal"] = "1" // Java reports 1 when nothing was put (avoids /0)
	m["putMessageFailedTimes"] = "0"
	m["putMessageSizeTotal"] = "0"
	var dist strings.Builder
	// StoreStatsService's latency bucket labels.
	for _, b := range []string{"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]",
		"[200~500ms]", "[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]"} {
		dist.WriteString(b + ":0 ")
	}
	m["putMessageDistributeTime"] = dist.String()
	m["putMessageAverageSize"] = "0.0"
	m["dispatchMaxBuffer"] = "0"
	m["getMessageEntireTimeMax"] = "0"
	for _, k := range []string{"putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferredTps"} {
		m[k] = "0.0 0.0 0.0" // 10 s, 1 min, 10 min windows
	}
	m["putLatency99"] = "0.00"
	m["putLatency999"] = "0.00"
	clDir := cfg.CommitLogDir()
	clRatio := diskUsedRatio(existingOr(clDir, cfg.StorePathRootDir))
	m["commitLogDiskRatio"] = formatDouble(clRatio)
	m["commitLogDiskRatio_"+clDir] = formatDouble(clRatio)
	m["consumeQueueDiskRatio"] = formatDouble(diskUsedRatio(existingOr(cfg.ConsumeQueueDir(), cfg.StorePathRootDir)))
	m["commitLogMinOffset"] = "0"
	m["commitLogMaxOffset"] = "0"

	// prepareRuntimeInfo.
	active := cfg.IsMaster()
	if p.d.IsActive != nil {
		active = p.d.IsActive()
	}
	m["brokerActive"] = strconv.FormatBool(active)
	m["brokerVersionDesc"] = remoting.VersionDesc(remoting.CurrentVersion)
	m["brokerVersion"] = strconv.Itoa(int(remoting.CurrentVersion))
	for _, k := range []string{"msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow",
		"msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow"} {
		m[k] = "0"
	}
	m["dispatchBehindBytes"] = "0"
	m["pageCacheLockTimeMills"] = "0"
	// No message yet: the earliest one is "now", so clusterList shows 0 hours.
	m["earliestMessageTimeStamp"] = i64(now.UnixMilli())
	m["startAcceptSendRequestTimeStamp"] = i64(cfg.StartAcceptSendRequestTimeStamp)
	m["timerReadBehind"] = "0"
	m["timerOffsetBehind"] = "0"
	m["timerCongestNum"] = "0"
	m["timerEnqueueTps"] = "0.0"
	m["timerDequeueTps"] = "0.0"
	m["remainTransientStoreBufferNumbs"] = "0"
	if cfg.TransientStorePoolEnable {
		m["remainHowManyDataToCommit"] = humanBytes(0)
	}
	m["remainHowManyDataToFlush"] = humanBytes(0)
	if total, free, _, ok := diskSpace(cfg.StorePathRootDir); ok {
		m["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.", humanBytes(total), humanBytes(free))
	}

	var pools map[string]PoolStat
	if p.d.Pools != nil {
		pools = p.d.Pools()
	}
	q := func(name string) string { return strconv.Itoa(pools[name].Queued) }
	m["sendThreadPoolQueueSize"] = q(PoolSend)
	m["sendThreadPoolQueueCapacity"] = strconv.Itoa(cfg.SendThreadPoolQueueCapacity)
	m["pullThreadPoolQueueSize"] = q(PoolPull)
	m["pullThreadPoolQueueCapacity"] = strconv.Itoa(cfg.PullThreadPoolQueueCapacity)
	m["litePullThreadPoolQueueSize"] = q(PoolLitePull)
	m["litePullThreadPoolQueueCapacity"] = strconv.Itoa(cfg.LitePullThreadPoolQueueCapacity)
	m["queryThreadPoolQueueSize"] = q(PoolQuery)
	m["queryThreadPoolQueueCapacity"] = strconv.Itoa(cfg.QueryThreadPoolQueueCapacity)
	m["ackThreadPoolQueueSize"] = q(PoolAck)
	m["ackThreadPoolQueueCapacity"] = strconv.Itoa(cfg.AckThreadPoolQueueCapacity)
	for _, k := range []string{PoolSend, PoolPull, PoolQuery, PoolLitePull, PoolAck} {
		m[k+"ThreadPoolQueueHeadWaitTimeMills"] = strconv.FormatInt(pools[k].HeadWait.Milliseconds(), 10)
	}
	m["EndTransactionQueueSize"] = q(PoolEndTransaction)
	m["EndTransactionThreadPoolQueueCapacity"] = strconv.Itoa(cfg.EndTransactionPoolQueueCapacity)

	if p.d.Runtime != nil {
		for k, v := range p.d.Runtime.RuntimeInfo() {
			m[k] = v
		}
	}
	// 4.x's spelling too [our choice]: Apache 5.0 renamed the key, and 4.x
	// mqadmin's clusterList reads only the old one (against Apache 5
	// brokers 4.9.8's clusterList fails with a NullPointerException).
	m["getTransferedTps"] = m["getTransferredTps"]
	return m
}

// getBrokerRuntimeInfo is GET_BROKER_RUNTIME_INFO (28).
func (p *Processor) getBrokerRuntimeInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return processor.Reply(req, "runtime info", protocol.KVTable{Table: p.RuntimeInfo()})
}

// getBrokerConfig is GET_BROKER_CONFIG (26): every key as properties text,
// plus ext `version`, the configuration's DataVersion JSON.
func (p *Processor) getBrokerConfig(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	cfg := p.d.Config.Get()
	v, err := protocol.Marshal(p.d.Config.Version())
	if err != nil {
		return nil, fmt.Errorf("encode config version: %w", err)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("version", string(v))
	resp.Body = []byte(cfg.AdminProperties())
	return resp, nil
}

// updateBrokerConfig is UPDATE_BROKER_CONFIG (25): a properties body applied
// atomically. Black-listed and read-only keys answer NO_PERMISSION (Java's
// answer for its black list), unknown keys and bad values INVALID_PARAMETER
// (Java silently ignores those; mqadmin users get no feedback there).
func (p *Processor) updateBrokerConfig(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) == 0 {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	kv, err := pcfg.ParseProperties(req.Body)
	if err != nil {
		return nil, badRequest("%v", err)
	}
	if len(kv) == 0 {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	changed, err := p.d.Config.Update(kv)
	if err != nil {
		return nil, err // already names the offending keys
	}
	p.log.Info("broker config updated", "changed", changed, "remote", processor.RemoteAddr(ch))
	if len(changed) > 0 && p.d.Hooks.ConfigChanged != nil {
		p.d.Hooks.ConfigChanged(changed)
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// formatRuntime is StoreStatsService.getFormatRuntime.
func formatRuntime(d time.Duration) string {
	ms := d.Milliseconds()
	const (
		second = 1000
		minute = 60 * second
		hour   = 60 * minute
		day    = 24 * hour
	)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]",
		ms/day, (ms%day)/hour, (ms%hour)/minute, (ms%minute)/second)
}

// diskUsedRatio is UtilAll.getDiskPartitionSpaceUsedPercent: used/(used +
// usable) rounded up to a hundredth, -1 when it cannot be measured.
func diskUsedRatio(path string) float64 {
	if _, err := os.Stat(path); err != nil {
		return -1
	}
	total, free, usable, ok := diskSpace(path)
	if !ok || total == 0 {
		return -1
	}
	used := total - free
	entire := used + usable
	if entire == 0 {
		return -1
	}
	pct := used * 100 / entire
	if used*100%entire != 0 {
		pct++
	}
	return float64(pct) / 100
}

func existingOr(path, fallback string) string {
	if _, err := os.Stat(path); err == nil {
		return path
	}
	return fallback
}

// formatDouble writes a double as Java's String.valueOf does for these
// values ("0.42", "-1.0").
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") && !math.IsInf(f, 0) && !math.IsNaN(f) {
		s += ".0"
	}
	return s
}

// humanBytes is MixAll.humanReadableByteCount(bytes, false).
func humanBytes(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	exp := int(math.Log(float64(n)) / math.Log(1024))
	exp = min(exp, 6)
	return fmt.Sprintf("%.1f %ciB", float64(n)/math.Pow(1024, float64(exp)), "KMGTPE"[exp-1])
}

// StatsViewer reads the broker's call statistics (brokerstats.Manager).
type StatsViewer interface {
	View(name, key string) (brokerstats.Data, bool)
}

// viewBrokerStatsData is VIEW_BROKER_STATS_DATA (315): the minute, hour and
// day windows of one statistic (statsName TOPIC_PUT_NUMS with a topic,
// GROUP_GET_NUMS with topic@group, ...), or SYSTEM_ERROR "The stats <name>
// <key> not exist" as Apache's AdminBrokerProcessor.ViewBrokerStatsData.
func (p *Processor) viewBrokerStatsData(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name, key := req.Ext("statsName"), req.Ext("statsKey")
	if name == "" || key == "" {
		return nil, remoting.Errorf(code.InvalidParameter, "the custom field <statsName> and <statsKey> are required")
	}
	var d brokerstats.Data
	found := false
	if p.d.Stats != nil {
		d, found = p.d.Stats.View(name, key)
	}
	if !found {
		return nil, remoting.Errorf(code.SystemError, "The stats <%s> <%s> not exist", name, key)
	}
	return processor.Reply(req, "broker stats", d)
}
