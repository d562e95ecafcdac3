package command

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// javaExportDir is where exportMetadata and exportConfigs write without -f.
const javaExportDir = "/tmp/rocketmq/export"

// writeExport writes the pretty JSON of node to dir/name (creating dir, as
// MixAll.string2FileNotSafe) and returns the path.
func writeExport(dir, name string, node jnode) (string, error) {
	path := dir + "/" + name
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	var b strings.Builder
	node.write(&b, 0)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	return path, nil
}

// ---- exportConfigs ----

// exportedBrokerKeys are the broker config keys exportConfigs keeps
// (ExportConfigsCommand.needBrokerProprties).
var exportedBrokerKeys = []string{
	"brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime", "filterServerNums",
	"flushDiskType", "maxMessageSize", "messageDelayLevel", "msgTraceTopicName", "slaveReadEnable",
	"traceOn", "traceTopicEnable", "useTLS", "autoCreateTopicEnable", "autoCreateSubscriptionGroup",
}

func newExportConfigs(a *app) *cobra.Command {
	return a.newClusterExportCmd("exportConfigs", "Export configs.", "configs.json", a.exportConfigs)
}

// newClusterExportCmd is a command that exports a cluster (-c, required)
// to a file under -f (default javaExportDir), as exportConfigs and
// exportMetrics.
func (a *app) newClusterExportCmd(use, short, file string, run func(ctx context.Context, c *admin.Client, cluster, dir string) error) *cobra.Command {
	var cluster, dir string
	c := newCmd(use, short)
	stringOpt(c.Flags(), &cluster, "c", "clusterName", "choose a cluster to export")
	stringOpt(c.Flags(), &dir, "f", "filePath", "export "+file+" path | default /tmp/rocketmq/export")
	markRequired(c, "clusterName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		d := javaExportDir
		if cmd.Flags().Changed("filePath") {
			d = strings.TrimSpace(dir)
		}
		return run(cmd.Context(), c, strings.TrimSpace(cluster), d)
	})
	return c
}

// exportConfigs is ExportConfigsCommand: dir/configs.json holds, per
// master of the cluster, a few keys of its config (26) under its broker
// name, and the cluster's scale (nameservers, masters, slaves). An unknown
// cluster is reported as Java does and exported empty.
func (a *app) exportConfigs(ctx context.Context, c *admin.Client, cluster, dir string) error {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	names, found := ci.ClusterAddrTable[cluster]
	if !found && !a.json() {
		fmt.Fprintf(a.env.Stdout, "[error] %s", "Make sure the specified clusterName exists or the name server connected to is correct.")
	}
	masters, slaves := []string{}, 0
	for _, name := range names {
		bd, ok := ci.BrokerAddrTable[name]
		if !ok {
			continue
		}
		m, ok := bd.BrokerAddrs[protocol.MasterID]
		if !ok {
			return fmt.Errorf("broker %s has no master: its config cannot be read", name)
		}
		masters = append(masters, m)
		slaves += len(bd.BrokerAddrs) - 1
	}
	configs := map[string]jobj{}
	for _, addr := range masters {
		props, err := c.GetBrokerConfig(ctx, addr)
		if err != nil {
			return err
		}
		name, _ := props.Get("brokerName")
		var keys []string
		kept := map[string]string{}
		for _, k := range exportedBrokerKeys {
			if v, ok := props.Get(k); ok {
				keys = append(keys, k)
				kept[k] = v
			}
		}
		// needBrokerProprties fills a new Properties (a ConcurrentHashMap)
		// in its list order: with 12 keys or more it has doubled, which
		// reorders bins.
		kp := newJavaCHM()
		for _, k := range keys {
			kp.put(k)
		}
		o := jobj{}
		for _, k := range kp.keys() {
			o = append(o, jfield{key: fastjsonQuote(k), node: jstr(kept[k])})
		}
		configs[name] = o
	}
	brokerConfigs := jobj{}
	for _, name := range javaHashOrder(sortedKeys(configs), hashMapDefault, false) {
		brokerConfigs = append(brokerConfigs, jfield{key: fastjsonQuote(name), node: configs[name]})
	}
	scale := map[string]int{"namesrvSize": len(c.NameServers()), "masterBrokerSize": len(masters), "slaveBrokerSize": slaves}
	scaleObj := jobj{}
	for _, k := range javaHashOrder(sortedKeys(scale), hashMapDefault, false) {
		scaleObj = append(scaleObj, jfield{key: fastjsonQuote(k), node: jraw(strconv.Itoa(scale[k]))})
	}
	return a.export(dir, "configs.json", hashObj(map[string]jnode{"brokerConfigs": brokerConfigs, "clusterScale": scaleObj}))
}

// export writes node to dir/name and prints Java's "export <path> success"
// (no newline), or the path as JSON.
func (a *app) export(dir, name string, node jnode) error {
	return a.exportLine(dir, name, node, "")
}

// exportLine is export with end after Java's line (exportMetadata -c ends
// it with a newline, the other exports do not).
func (a *app) exportLine(dir, name string, node jnode, end string) error {
	path, err := writeExport(dir, name, node)
	if err != nil {
		return err
	}
	if a.json() {
		return writeJSON(a.env.Stdout, struct {
			Path string `json:"path"`
		}{path})
	}
	fmt.Fprintf(a.env.Stdout, "export %s success%s", path, end)
	return nil
}

// ---- exportMetadata ----

type exportMetadataOpts struct {
	cluster, broker, dir    string
	topics, groups, special bool
}

func newExportMetadata(a *app) *cobra.Command {
	var o exportMetadataOpts
	c := newCmd("exportMetadata", "Export metadata.")
	fs := c.Flags()
	stringOpt(fs, &o.cluster, "c", "clusterName", "choose a cluster to export")
	stringOpt(fs, &o.broker, "b", "brokerAddr", "choose a broker to export")
	stringOpt(fs, &o.dir, "f", "filePath", "export metadata.json path | default /tmp/rocketmq/export")
	boolOpt(fs, &o.topics, "t", "topic", "only export topic metadata")
	boolOpt(fs, &o.groups, "g", "subscriptionGroup", "only export subscriptionGroup metadata")
	boolOpt(fs, &o.special, "s", "specialTopic", "need retryTopic and dlqTopic")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		if cmd.Flags().Changed("filePath") {
			o.dir = strings.TrimSpace(o.dir)
		} else {
			o.dir = javaExportDir
		}
		return a.exportMetadata(cmd.Context(), cmd, c, o)
	})
	return c
}

// userTopics is DefaultMQAdminExt.getUserTopicConfig: a broker's topics
// (21) without its system topics (305), reserved names, %RETRY% and %DLQ%
// topics unless special, and topics of an invalid perm; the keys in the
// order of the Java client's ConcurrentHashMap of them.
func userTopics(ctx context.Context, c *admin.Client, addr string, special bool) (*protocol.TopicConfigSerializeWrapper, []string, error) {
	w, err := c.GetAllTopicConfig(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	sys, err := c.GetSystemTopicListFromBroker(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	all := javaConcurrentPutAllOrder(sortedKeys(w.TopicConfigTable))
	var keys []string
	for _, name := range all {
		tc := w.TopicConfigTable[name]
		switch {
		case slices.Contains(sys, tc.TopicName) || protocol.IsSystemTopic(tc.TopicName),
			!special && (strings.HasPrefix(tc.TopicName, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(tc.TopicName, protocol.DLQGroupTopicPrefix)),
			tc.Perm < 0 || tc.Perm >= protocol.PermPriority: // PermName.isValid
			delete(w.TopicConfigTable, name)
		default:
			keys = append(keys, name)
		}
	}
	return w, keys, nil
}

// userGroups is DefaultMQAdminExt.getUserSubscriptionGroup: a broker's
// subscription groups (201) without the system and predefined ones.
func userGroups(ctx context.Context, c *admin.Client, addr string) (*admin.SubscriptionGroupTable, []string, error) {
	t, err := c.GetAllSubscriptionGroups(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	var keys []string
	for _, g := range javaConcurrentPutAllOrder(sortedKeys(t.Groups)) {
		if admin.IsSysConsumerGroup(g) || admin.IsPredefinedGroup(g) {
			delete(t.Groups, g)
			continue
		}
		keys = append(keys, g)
	}
	return t, keys, nil
}

// exportMetadata is ExportMetadataCommand. With -b it writes the broker's
// user topics (-t, dir/topic.json) or subscription groups (-g,
// dir/subscriptionGroup.json) as their wrappers; with neither it writes
// nothing, as Java. With -c it merges the masters' tables (queue and retry
// queue counts summed, the last master's config otherwise) into
// dir/metadata.json (or topic.json / subscriptionGroup.json with -t / -g)
// with the export time.
func (a *app) exportMetadata(ctx context.Context, cmd *cobra.Command, c *admin.Client, o exportMetadataOpts) error {
	if cmd.Flags().Changed("brokerAddr") {
		addr := strings.TrimSpace(o.broker)
		switch {
		case o.topics:
			w, keys, err := userTopics(ctx, c, addr, o.special)
			if err != nil {
				return err
			}
			root := jobj{
				{fastjsonQuote("dataVersion"), dataVersionNode(w.DataVersion)},
				{fastjsonQuote("topicConfigTable"), topicTableNode(w.TopicConfigTable, keys)},
			}
			return a.export(o.dir, "topic.json", root)
		case o.groups:
			t, keys, err := userGroups(ctx, c, addr)
			if err != nil {
				return err
			}
			forbidden := jobj{}
			for _, g := range javaConcurrentPutAllOrder(sortedKeys(t.ForbiddenTable)) {
				inner := jobj{}
				for _, k := range javaHashOrder(sortedKeys(t.ForbiddenTable[g]), hashMapDefault, true) {
					inner = append(inner, jfield{fastjsonQuote(k), jraw(strconv.Itoa(t.ForbiddenTable[g][k]))})
				}
				forbidden = append(forbidden, jfield{fastjsonQuote(g), inner})
			}
			root := jobj{
				{fastjsonQuote("dataVersion"), dataVersionNode(t.DataVersion)},
				{fastjsonQuote("forbiddenTable"), forbidden},
				{fastjsonQuote("subscriptionGroupTable"), groupTableNode(t.Groups, keys)},
			}
			return a.export(o.dir, "subscriptionGroup.json", root)
		default:
			return nil
		}
	}

	masters, err := clusterMastersJava(ctx, c, strings.TrimSpace(o.cluster))
	if err != nil {
		return err
	}
	topics := map[string]protocol.TopicConfig{}
	var topicOrder []string
	groups := map[string]admin.SubscriptionGroupConfig{}
	var groupOrder []string
	for _, addr := range masters {
		w, keys, err := userTopics(ctx, c, addr, o.special)
		if err != nil {
			return err
		}
		t, gkeys, err := userGroups(ctx, c, addr)
		if err != nil {
			return err
		}
		for _, k := range keys {
			tc := w.TopicConfigTable[k]
			if prev, ok := topics[k]; ok {
				tc.WriteQueueNums += prev.WriteQueueNums
				tc.ReadQueueNums += prev.ReadQueueNums
			}
			topics[k] = tc
			topicOrder = append(topicOrder, k)
		}
		for _, k := range gkeys {
			g := t.Groups[k]
			if prev, ok := groups[k]; ok {
				g.RetryQueueNums += prev.RetryQueueNums
			}
			groups[k] = g
			groupOrder = append(groupOrder, k)
		}
	}
	result := map[string]jnode{}
	var resultOrder []string
	name := "metadata.json"
	switch {
	case o.topics:
		result["topicConfigTable"] = topicTableNode(topics, javaHashOrder(topicOrder, hashMapDefault, false))
		resultOrder = append(resultOrder, "topicConfigTable")
		name = "topic.json"
	case o.groups:
		result["subscriptionGroupTable"] = groupTableNode(groups, javaHashOrder(groupOrder, hashMapDefault, false))
		resultOrder = append(resultOrder, "subscriptionGroupTable")
		name = "subscriptionGroup.json"
	default:
		result["topicConfigTable"] = topicTableNode(topics, javaHashOrder(topicOrder, hashMapDefault, false))
		result["subscriptionGroupTable"] = groupTableNode(groups, javaHashOrder(groupOrder, hashMapDefault, false))
		resultOrder = append(resultOrder, "topicConfigTable", "subscriptionGroupTable")
	}
	result["exportTime"] = jraw(strconv.FormatInt(a.env.Now().UnixMilli(), 10))
	resultOrder = append(resultOrder, "exportTime")
	root := jobj{}
	for _, k := range javaHashOrder(resultOrder, hashMapDefault, false) {
		root = append(root, jfield{fastjsonQuote(k), result[k]})
	}
	return a.exportLine(o.dir, name, root, "\n")
}

// javaConcurrentPutAllOrder is the iteration order of the table the Java
// client builds from a 21 or 201 answer: fastjson decodes the body's map
// (keys in body order; our broker and the fake write them sorted) into a
// new ConcurrentHashMap, which is then putAll into another new one.
func javaConcurrentPutAllOrder(keys []string) []string {
	decoded := newJavaCHM()
	for _, k := range keys {
		decoded.put(k)
	}
	order := decoded.keys()
	client := newJavaCHM()
	client.presize(len(order))
	for _, k := range order {
		client.put(k)
	}
	return client.keys()
}

// javaCHM simulates where java.util.concurrent.ConcurrentHashMap keeps its
// keys, which decides its iteration order: bins indexed by the spread
// hash, new keys appended to their bin, the table doubled when the count
// reaches 3/4 of it, and a doubling (transfer) keeping the tail run of a
// bin whose nodes go the same way and prepending the nodes before it.
type javaCHM struct {
	bins  [][]string
	count int
}

func newJavaCHM() *javaCHM { return &javaCHM{} }

func chmSpread(k string) uint32 {
	h := uint32(javaStringHash(k))
	return (h ^ h>>16) & 0x7fffffff
}

// presize is tryPresize(size), as putAll calls it.
func (m *javaCHM) presize(size int) {
	c := 1
	for c < size+size>>1+1 {
		c <<= 1
	}
	if m.bins == nil {
		m.bins = make([][]string, c)
	}
	// The loop goes on while c exceeds the resize threshold, so a fresh
	// table of c bins is doubled once more.
	for c > len(m.bins)-len(m.bins)/4 {
		m.transfer()
	}
}

func (m *javaCHM) put(k string) {
	if m.bins == nil {
		m.bins = make([][]string, 16)
	}
	i := chmSpread(k) & uint32(len(m.bins)-1)
	if slices.Contains(m.bins[i], k) {
		return
	}
	m.bins[i] = append(m.bins[i], k)
	m.count++
	for m.count >= len(m.bins)-len(m.bins)/4 {
		m.transfer()
	}
}

func (m *javaCHM) transfer() {
	n := len(m.bins)
	next := make([][]string, 2*n)
	for i, bin := range m.bins {
		if len(bin) == 0 {
			continue
		}
		bit := func(k string) uint32 { return chmSpread(k) & uint32(n) }
		run, last := bit(bin[0]), 0
		for j := 1; j < len(bin); j++ {
			if b := bit(bin[j]); b != run {
				run, last = b, j
			}
		}
		var lo, hi []string
		if run == 0 {
			lo = slices.Clone(bin[last:])
		} else {
			hi = slices.Clone(bin[last:])
		}
		for j := 0; j < last; j++ {
			if bit(bin[j]) == 0 {
				lo = append([]string{bin[j]}, lo...)
			} else {
				hi = append([]string{bin[j]}, hi...)
			}
		}
		next[i], next[i+n] = lo, hi
	}
	m.bins = next
}

func (m *javaCHM) keys() []string {
	var out []string
	for _, bin := range m.bins {
		out = append(out, bin...)
	}
	return out
}

func dataVersionNode(v protocol.DataVersion) jobj {
	return jobj{
		{fastjsonQuote("counter"), jraw(strconv.FormatInt(v.Counter, 10))},
		{fastjsonQuote("stateVersion"), jraw(strconv.FormatInt(v.StateVersion, 10))},
		{fastjsonQuote("timestamp"), jraw(strconv.FormatInt(v.Timestamp, 10))},
	}
}

// stringMapNode is a HashMap<String,String> of a config's attributes.
func stringMapNode(m map[string]string) jobj {
	o := jobj{}
	for _, k := range javaHashOrder(sortedKeys(m), hashMapDefault, false) {
		o = append(o, jfield{fastjsonQuote(k), jstr(m[k])})
	}
	return o
}

// topicConfigNode is TopicConfig as fastjson writes a bean (sorted fields,
// null ones left out: a missing attributes map or filter type).
func topicConfigNode(tc protocol.TopicConfig) jobj {
	o := jobj{}
	if tc.Attributes != nil {
		o = append(o, jfield{fastjsonQuote("attributes"), stringMapNode(tc.Attributes)})
	}
	o = append(o,
		jfield{fastjsonQuote("order"), jraw(strconv.FormatBool(tc.Order))},
		jfield{fastjsonQuote("perm"), jraw(strconv.Itoa(tc.Perm))},
		jfield{fastjsonQuote("readQueueNums"), jraw(strconv.Itoa(tc.ReadQueueNums))})
	if tc.TopicFilterType != "" {
		o = append(o, jfield{fastjsonQuote("topicFilterType"), jstr(tc.TopicFilterType)})
	}
	return append(o,
		jfield{fastjsonQuote("topicName"), jstr(tc.TopicName)},
		jfield{fastjsonQuote("topicSysFlag"), jraw(strconv.Itoa(tc.TopicSysFlag))},
		jfield{fastjsonQuote("writeQueueNums"), jraw(strconv.Itoa(tc.WriteQueueNums))})
}

func topicTableNode(m map[string]protocol.TopicConfig, keys []string) jobj {
	o := jobj{}
	for _, k := range keys {
		o = append(o, jfield{fastjsonQuote(k), topicConfigNode(m[k])})
	}
	return o
}

// groupConfigNode is SubscriptionGroupConfig as fastjson writes it.
func groupConfigNode(g admin.SubscriptionGroupConfig) jobj {
	b := func(v bool) jnode { return jraw(strconv.FormatBool(v)) }
	i := func(v int64) jnode { return jraw(strconv.FormatInt(v, 10)) }
	policy := jobj{}
	if p := g.GroupRetryPolicy.CustomizedRetryPolicy; p != nil {
		next := jarr{}
		for _, d := range p.Next {
			next.items = append(next.items, i(d))
		}
		policy = append(policy, jfield{fastjsonQuote("customizedRetryPolicy"), jobj{{fastjsonQuote("next"), next}}})
	}
	if p := g.GroupRetryPolicy.ExponentialRetryPolicy; p != nil {
		policy = append(policy, jfield{fastjsonQuote("exponentialRetryPolicy"), jobj{
			{fastjsonQuote("initial"), i(p.Initial)},
			{fastjsonQuote("max"), i(p.Max)},
			{fastjsonQuote("multiplier"), i(p.Multiplier)},
		}})
	}
	policy = append(policy, jfield{fastjsonQuote("type"), jstr(g.GroupRetryPolicy.Type)})
	attrs := g.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	return jobj{
		{fastjsonQuote("attributes"), stringMapNode(attrs)},
		{fastjsonQuote("brokerId"), i(g.BrokerID)},
		{fastjsonQuote("consumeBroadcastEnable"), b(g.ConsumeBroadcastEnable)},
		{fastjsonQuote("consumeEnable"), b(g.ConsumeEnable)},
		{fastjsonQuote("consumeFromMinEnable"), b(g.ConsumeFromMinEnable)},
		{fastjsonQuote("consumeMessageOrderly"), b(g.ConsumeMessageOrderly)},
		{fastjsonQuote("consumeTimeoutMinute"), i(int64(g.ConsumeTimeoutMinute))},
		{fastjsonQuote("groupName"), jstr(g.GroupName)},
		{fastjsonQuote("groupRetryPolicy"), policy},
		{fastjsonQuote("groupSysFlag"), i(int64(g.GroupSysFlag))},
		{fastjsonQuote("notifyConsumerIdsChangedEnable"), b(g.NotifyConsumerIdsChangedEnable)},
		{fastjsonQuote("retryMaxTimes"), i(int64(g.RetryMaxTimes))},
		{fastjsonQuote("retryQueueNums"), i(int64(g.RetryQueueNums))},
		{fastjsonQuote("whichBrokerWhenConsumeSlowly"), i(g.WhichBrokerWhenConsumeSlowly)},
	}
}

func groupTableNode(m map[string]admin.SubscriptionGroupConfig, keys []string) jobj {
	o := jobj{}
	for _, k := range keys {
		o = append(o, jfield{fastjsonQuote(k), groupConfigNode(m[k])})
	}
	return o
}
