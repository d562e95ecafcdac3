package command

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// fastjson2's JSONWriter.Feature.PrettyFormat, as the Java tool prints
// topicRoute: tab indentation, no space after ':', bare numeric keys for
// Long/Integer-keyed maps, "{}" for empty maps, "[]" for empty string lists
// but "[\n<indent>\n]" for empty lists of beans (brokerDatas, queueDatas).

type jnode interface {
	write(b *strings.Builder, level int)
}

type jraw string // number, boolean, or already-quoted text

func (r jraw) write(b *strings.Builder, _ int) { b.WriteString(string(r)) }

type jstr string

func (s jstr) write(b *strings.Builder, _ int) { b.WriteString(fastjsonQuote(string(s))) }

type jfield struct {
	key  string // written as is (quote it with fastjsonQuote for string keys)
	node jnode
}

type jobj []jfield

func (o jobj) write(b *strings.Builder, level int) {
	if len(o) == 0 {
		b.WriteString("{}")
		return
	}
	b.WriteString("{\n")
	for i, f := range o {
		if i > 0 {
			b.WriteString(",\n")
		}
		tabs(b, level+1)
		b.WriteString(f.key)
		b.WriteByte(':')
		f.node.write(b, level+1)
	}
	b.WriteByte('\n')
	tabs(b, level)
	b.WriteByte('}')
}

type jarr struct {
	items []jnode
	beans bool // a List of beans: empty prints as "[\n<indent>\n<indent>]"
}

func (a jarr) write(b *strings.Builder, level int) {
	if len(a.items) == 0 {
		if !a.beans {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		tabs(b, level+1)
		b.WriteByte('\n')
		tabs(b, level)
		b.WriteByte(']')
		return
	}
	b.WriteString("[\n")
	for i, it := range a.items {
		if i > 0 {
			b.WriteString(",\n")
		}
		tabs(b, level+1)
		it.write(b, level+1)
	}
	b.WriteByte('\n')
	tabs(b, level)
	b.WriteByte(']')
}

func tabs(b *strings.Builder, n int) {
	for range n {
		b.WriteByte('\t')
	}
}

// fastjsonQuote quotes a string as fastjson2 does: non-ASCII is kept, '"'
// and '\' and control characters are escaped.
func fastjsonQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func intKeyObj[K int | int64](m map[K]string, num func(string) jnode) jobj {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	o := jobj{}
	for _, k := range keys {
		o = append(o, jfield{key: strconv.FormatInt(int64(k), 10), node: num(m[k])})
	}
	return o
}

func brokerDataNode(bd protocol.BrokerData) jobj {
	o := jobj{
		{key: `"brokerAddrs"`, node: intKeyObj(bd.BrokerAddrs, func(s string) jnode { return jstr(s) })},
		{key: `"brokerName"`, node: jstr(bd.BrokerName)},
		{key: `"cluster"`, node: jstr(bd.Cluster)},
		{key: `"enableActingMaster"`, node: jraw(strconv.FormatBool(bd.EnableActingMaster))},
	}
	if bd.ZoneName != "" {
		o = append(o, jfield{key: `"zoneName"`, node: jstr(bd.ZoneName)})
	}
	return o
}

func queueDataNode(q protocol.QueueData) jobj {
	return jobj{
		{key: `"brokerName"`, node: jstr(q.BrokerName)},
		{key: `"perm"`, node: jraw(strconv.Itoa(q.Perm))},
		{key: `"readQueueNums"`, node: jraw(strconv.Itoa(q.ReadQueueNums))},
		{key: `"topicSysFlag"`, node: jraw(strconv.Itoa(q.TopicSysFlag))},
		{key: `"writeQueueNums"`, node: jraw(strconv.Itoa(q.WriteQueueNums))},
	}
}

func mappingInfoNode(m protocol.TopicQueueMappingInfo) jobj {
	curr := map[int]string{}
	for k, v := range m.CurrIDMap {
		curr[k] = strconv.Itoa(v)
	}
	return jobj{
		{key: `"bname"`, node: jstr(m.Bname)},
		{key: `"currIdMap"`, node: intKeyObj(curr, func(s string) jnode { return jraw(s) })},
		{key: `"dirty"`, node: jraw(strconv.FormatBool(m.Dirty))},
		{key: `"epoch"`, node: jraw(strconv.FormatInt(m.Epoch, 10))},
		{key: `"scope"`, node: jstr(m.Scope)},
		{key: `"topic"`, node: jstr(m.Topic)},
		{key: `"totalQueues"`, node: jraw(strconv.Itoa(m.TotalQueues))},
	}
}

// prettyRoute renders a route as TopicRouteData.toJson(true).
func prettyRoute(r *protocol.TopicRouteData) string {
	brokers := jarr{beans: true}
	for _, bd := range r.BrokerDatas {
		brokers.items = append(brokers.items, brokerDataNode(bd))
	}
	fst := jobj{}
	for _, k := range javaHashOrder(sortedKeys(r.FilterServerTable), hashMapDefault, false) {
		arr := jarr{}
		for _, s := range r.FilterServerTable[k] {
			arr.items = append(arr.items, jstr(s))
		}
		fst = append(fst, jfield{key: fastjsonQuote(k), node: arr})
	}
	queues := jarr{beans: true}
	for _, q := range r.QueueDatas {
		queues.items = append(queues.items, queueDataNode(q))
	}
	o := jobj{
		{key: `"brokerDatas"`, node: brokers},
		{key: `"filterServerTable"`, node: fst},
	}
	if r.OrderTopicConf != "" {
		o = append(o, jfield{key: `"orderTopicConf"`, node: jstr(r.OrderTopicConf)})
	}
	o = append(o, jfield{key: `"queueDatas"`, node: queues})
	if r.TopicQueueMappingByBroker != nil {
		m := jobj{}
		for _, k := range javaHashOrder(sortedKeys(r.TopicQueueMappingByBroker), hashMapDefault, false) {
			m = append(m, jfield{key: fastjsonQuote(k), node: mappingInfoNode(r.TopicQueueMappingByBroker[k])})
		}
		o = append(o, jfield{key: `"topicQueueMappingByBroker"`, node: m})
	}
	var b strings.Builder
	o.write(&b, 0)
	return b.String()
}
