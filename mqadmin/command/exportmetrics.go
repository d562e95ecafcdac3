package command

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// ---- exportMetrics ----

func newExportMetrics(a *app) *cobra.Command {
	return a.newClusterExportCmd("exportMetrics", "Export metrics.", "metrics.json", a.exportMetrics)
}

// hashObj is a java.util.HashMap<String, ?> as fastjson writes it: its
// entries in the map's iteration order; nil values are left out.
func hashObj(m map[string]jnode) jobj {
	o := jobj{}
	for _, k := range javaHashOrder(sortedKeys(m), hashMapDefault, false) {
		if m[k] != nil {
			o = append(o, jfield{key: fastjsonQuote(k), node: m[k]})
		}
	}
	return o
}

// optStr is a String value that may be null (a missing key).
func optStr(kv map[string]string, key string) jnode {
	if v, ok := kv[key]; ok {
		return jstr(v)
	}
	return nil
}

func jdouble(v float64) jnode { return jraw(javaDouble(v)) }
func jlong(v int64) jnode     { return jraw(strconv.FormatInt(v, 10)) }

// metricsTotals are ExportMetricsCommand's totals over the brokers.
type metricsTotals struct {
	normalIn, normalOut, transIn, scheduleIn          float64
	normalInDay, normalOutDay, transInDay, schedInDay int64
}

// exportMetrics is ExportMetricsCommand: for each broker name of the
// cluster, its master's runtime environment, quotas (disk ratios, TPS,
// the day's message counts, average size, user topic and group counts)
// and the versions of the clients of its user groups, with the cluster's
// totals, into dir/metrics.json.
func (a *app) exportMetrics(ctx context.Context, c *admin.Client, cluster, dir string) error {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	names, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return fmt.Errorf("cluster %q: %w", cluster, admin.ErrClusterNotFound)
	}
	var tot metricsTotals
	report := map[string]jnode{}
	for _, name := range javaHashOrder(names, hashMapDefault, false) {
		bd, ok := ci.BrokerAddrTable[name]
		if !ok {
			continue
		}
		addr := bd.BrokerAddrs[protocol.MasterID]
		if addr == "" {
			return fmt.Errorf("broker %s has no master", name)
		}
		info, err := a.brokerMetrics(ctx, c, addr, &tot)
		if err != nil {
			return err
		}
		report[name] = info
	}
	totalData := hashObj(map[string]jnode{
		"totalTps": hashObj(map[string]jnode{
			"totalNormalInTps": jdouble(tot.normalIn), "totalNormalOutTps": jdouble(tot.normalOut),
			"totalTransInTps": jdouble(tot.transIn), "totalScheduleInTps": jdouble(tot.scheduleIn),
		}),
		"totalOneDayNum": hashObj(map[string]jnode{
			"normalOneDayInNum": jlong(tot.normalInDay), "normalOneDayOutNum": jlong(tot.normalOutDay),
			"transOneDayInNum": jlong(tot.transInDay), "scheduleOneDayInNum": jlong(tot.schedInDay),
		}),
	})
	return a.export(dir, "metrics.json", hashObj(map[string]jnode{"evaluateReport": hashObj(report), "totalData": totalData}))
}

// firstDouble is Double.parseDouble of the first space-separated field.
func firstDouble(kv map[string]string, key string) (float64, error) {
	f := strings.Split(kv[key], " ")[0]
	v, err := strconv.ParseFloat(f, 64)
	if err != nil {
		return 0, fmt.Errorf("runtime %s %q: %w", key, kv[key], err)
	}
	return v, nil
}

func runtimeLong(kv map[string]string, key string) (int64, error) {
	v, err := strconv.ParseInt(kv[key], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("runtime %s %q: %w", key, kv[key], err)
	}
	return v, nil
}

// sysStats is viewBrokerStatsData of a system topic's puts: nil when the
// broker answers an error code (Java catches the MQClientException).
func sysStats(ctx context.Context, c *admin.Client, addr, topic string) (*admin.BrokerStatsData, error) {
	d, err := c.ViewBrokerStatsData(ctx, addr, admin.StatsTopicPutNums, topic)
	var re *admin.ResponseError
	if errors.As(err, &re) {
		return nil, nil
	}
	return d, err
}

func (a *app) brokerMetrics(ctx context.Context, c *admin.Client, addr string, tot *metricsTotals) (jnode, error) {
	kv, err := c.GetBrokerRuntimeInfo(ctx, addr)
	if err != nil {
		return nil, err
	}
	props, err := c.GetBrokerConfig(ctx, addr)
	if err != nil {
		return nil, err
	}
	groups, groupKeys, err := userGroups(ctx, c, addr)
	if err != nil {
		return nil, err
	}
	topics, _, err := userTopics(ctx, c, addr, false)
	if err != nil {
		return nil, err
	}
	trans, err := sysStats(ctx, c, addr, protocol.TransHalfTopic)
	if err != nil {
		return nil, err
	}
	sched, err := sysStats(ctx, c, addr, protocol.ScheduleTopic)
	if err != nil {
		return nil, err
	}
	var cpu jnode
	if v, ok := props.Get("clientCallbackExecutorThreads"); ok {
		cpu = jstr(v)
	}
	env := hashObj(map[string]jnode{"cpuNum": cpu, "totalMemKBytes": optStr(kv, "totalMemKBytes")})

	in, err := firstDouble(kv, "putTps")
	if err != nil {
		return nil, err
	}
	out, err := firstDouble(kv, "getTransferredTps")
	if err != nil {
		return nil, err
	}
	var transTps, schedTps float64
	var transDay, schedDay int64
	if trans != nil {
		transTps, transDay = trans.StatsMinute.Tps, trans.Sum24Hours()
	}
	if sched != nil {
		schedTps, schedDay = sched.StatsMinute.Tps, sched.Sum24Hours()
	}
	day := map[string]int64{}
	for _, k := range []string{"msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"} {
		if day[k], err = runtimeLong(kv, k); err != nil {
			return nil, err
		}
	}
	inDay := day["msgPutTotalTodayMorning"] - day["msgPutTotalYesterdayMorning"]
	outDay := day["msgGetTotalTodayMorning"] - day["msgGetTotalYesterdayMorning"]
	tot.normalIn += in
	tot.normalOut += out
	tot.transIn += transTps
	tot.scheduleIn += schedTps
	tot.normalInDay += inDay
	tot.normalOutDay += outDay
	tot.transInDay += transDay
	tot.schedInDay += schedDay
	quota := hashObj(map[string]jnode{
		"diskRatio": hashObj(map[string]jnode{"commitLogDiskRatio": optStr(kv, "commitLogDiskRatio"), "consumeQueueDiskRatio": optStr(kv, "consumeQueueDiskRatio")}),
		"tps": hashObj(map[string]jnode{
			"normalInTps": jdouble(in), "normalOutTps": jdouble(out), "transInTps": jdouble(transTps), "scheduleInTps": jdouble(schedTps),
		}),
		"oneDayNum": hashObj(map[string]jnode{
			"normalOneDayInNum": jlong(inDay), "normalOneDayOutNum": jlong(outDay), "transOneDayInNum": jlong(transDay), "scheduleOneDayInNum": jlong(schedDay),
		}),
		"messageAverageSize": optStr(kv, "putMessageAverageSize"),
		"topicSize":          jlong(int64(len(topics.TopicConfigTable))),
		"groupSize":          jlong(int64(len(groups.Groups))),
	})

	// runtimeVersion: "LANGUAGE%version" of the clients of every user group
	// (a HashSet), skipping groups whose connections cannot be read.
	var clients []string
	for _, g := range groupKeys {
		cc, err := c.ExamineConsumerConnection(ctx, groups.Groups[g].GroupName, "")
		if err != nil {
			continue
		}
		for _, conn := range cc.ConnectionSet {
			clients = append(clients, conn.Language+"%"+admin.VersionDesc(conn.Version))
		}
	}
	clientSet := jarr{beans: true} // an empty HashSet prints as a list of beans
	for _, ci := range javaHashOrder(clients, hashMapDefault, false) {
		clientSet.items = append(clientSet.items, jstr(ci))
	}
	version := hashObj(map[string]jnode{
		"rocketmqVersion": jstr(remoting.VersionDesc(remoting.CurrentVersion)),
		"clientInfo":      clientSet,
	})
	return hashObj(map[string]jnode{"runtimeEnv": env, "runtimeQuota": quota, "runtimeVersion": version}), nil
}
