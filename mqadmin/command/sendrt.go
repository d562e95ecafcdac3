package command

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// sendMsgStatus, checkMsgSendRT and clusterRT (rocketmq-tools
// SendMsgStatusCommand, CheckMsgSendRTCommand, CLusterSendMsgRTCommand):
// send test messages and print how long each send took.

// javaAvg is String.format("%.2f", sum/(n-1)) of the tools' average RT
// (the first send does not count; one send gives Java's NaN).
func javaAvg(sum int64, n int64) string {
	if n-1 == 0 {
		if sum == 0 {
			return "NaN"
		}
		return "Infinity"
	}
	return javaFixed(float64(sum)/float64(n-1), 2)
}

// ---- sendMsgStatus ----

type sendMsgStatusOpts struct{ broker, size, count string }

func newSendMsgStatus(a *app) *cobra.Command {
	var o sendMsgStatusOpts
	c := newCmd("sendMsgStatus", "Send msg to broker.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerName", "Broker Name e.g. clusterName_brokerName as DefaultCluster_broker-a")
	stringOpt(fs, &o.size, "s", "messageSize", "Message Size, Default: 128")
	stringOpt(fs, &o.count, "c", "count", "send message count, Default: 50")
	markRequired(c, "brokerName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.sendMsgStatus(cmd.Context(), cmd, o) })
	return c
}

// jodieBody is SendMsgStatusCommand.buildMessage's body: "hello jodie"
// repeated until it has at least size bytes.
func jodieBody(size int) []byte {
	var b strings.Builder
	for i := 0; i < size; i += 11 {
		b.WriteString("hello jodie")
	}
	return []byte(b.String())
}

// sendMsgStatus sends, as group PID_SMSC, one 16-byte message and then
// -c messages of -s bytes to the topic named like the broker (a Java
// broker's own topic), printing each send's time and result.
func (a *app) sendMsgStatus(ctx context.Context, cmd *cobra.Command, o sendMsgStatusOpts) error {
	topic := strings.TrimSpace(o.broker)
	size, count := 128, 50
	if err := parseChanged(cmd.Flags().Changed,
		parsedOpt("messageSize", "s", o.size, javaInt, &size),
		parsedOpt("count", "c", o.count, javaInt, &count),
	); err != nil {
		return err
	}
	w := a.env.Stdout
	return a.withProducer(ctx, "PID_SMSC", func(p *client.Producer) error {
		if _, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: jodieBody(16)}); err != nil {
			return err
		}
		type sent struct {
			RTMillis int64           `json:"rtMillis"`
			Result   *sendResultJSON `json:"result"`
		}
		results := []sent{}
		for range count {
			begin := time.Now()
			res, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: jodieBody(size)})
			if err != nil {
				return err
			}
			rt := time.Since(begin).Milliseconds()
			results = append(results, sent{rt, sendResultOf(res)})
			if !a.json() {
				fmt.Fprintf(w, "rt=%dms, SendResult=%s\n", rt, javaSendResult(res))
			}
		}
		if a.json() {
			return writeJSONField(w, "sends", results)
		}
		return nil
	})
}

// ---- checkMsgSendRT ----

type checkMsgSendRTOpts struct{ topic, amount, size string }

func newCheckMsgSendRT(a *app) *cobra.Command {
	var o checkMsgSendRTOpts
	c := newCmd("checkMsgSendRT", "Check message send response time.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.amount, "a", "amount", "message amount | default 100")
	stringOpt(fs, &o.size, "s", "size", "message size | default 128 Byte")
	markRequired(c, "topic")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.checkMsgSendRT(cmd.Context(), cmd, o) })
	return c
}

// checkMsgSendRT is CheckMsgSendRTCommand: -a messages of -s bytes ("a"s),
// the i-th to the (i mod n)-th writable queue of the topic, a line per
// send (a failed send keeps the previous queue in its line, as Java's
// static fields do), then the average time of all sends but the first.
func (a *app) checkMsgSendRT(ctx context.Context, cmd *cobra.Command, o checkMsgSendRTOpts) error {
	topic := strings.TrimSpace(o.topic)
	amount, size := int64(100), int64(128)
	if err := parseChanged(cmd.Flags().Changed,
		parsedOpt("amount", "a", o.amount, javaLong, &amount),
		parsedOpt("size", "s", o.size, javaLong, &size),
	); err != nil {
		return err
	}
	if size < 0 || size > math.MaxInt32 {
		return usagef("invalid value %d for -s: not a message size", size)
	}
	body := []byte(strings.Repeat("a", int(size)))
	w := a.env.Stdout
	group := fmt.Sprint(a.env.Now().UnixMilli())
	return a.withProducer(ctx, group, func(p *client.Producer) error {
		type sendRT struct {
			BrokerName string `json:"brokerName"`
			QueueID    int    `json:"queueId"`
			OK         bool   `json:"ok"`
			RTMillis   int64  `json:"rtMillis"`
		}
		rows := []sendRT{}
		if !a.json() {
			fmt.Fprintf(w, "%-32s  %-4s  %-20s    %s\n", "#Broker Name", "#QID", "#Send Result", "#RT")
		}
		var last protocol.MessageQueue
		var elapsed int64
		for i := int64(0); i < amount; i++ {
			start := time.Now()
			_, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: body}, client.WithSelector(func(qs []protocol.MessageQueue, _ *message.Message) protocol.MessageQueue {
				last = qs[int(i%int64(len(qs)))]
				return last
			}))
			rt := time.Since(start).Milliseconds()
			if i != 0 {
				elapsed += rt
			}
			rows = append(rows, sendRT{last.BrokerName, last.QueueID, err == nil, rt})
			if err != nil {
				a.env.Log.Debug("checkMsgSendRT: send", "err", err)
			}
			if !a.json() {
				fmt.Fprintf(w, "%-32s  %-4d  %-20t    %d\n", last.BrokerName, last.QueueID, err == nil, rt)
			}
		}
		if a.json() {
			return writeJSON(w, struct {
				Sends []sendRT `json:"sends"`
				AvgRT string   `json:"avgRt"`
			}{rows, javaAvg(elapsed, amount)})
		}
		fmt.Fprintf(w, "Avg RT: %s\n", javaAvg(elapsed, amount))
		return nil
	})
}

// ---- clusterRT ----

type clusterRTOpts struct{ amount, size, cluster, printLog, room, interval string }

func newClusterRT(a *app) *cobra.Command {
	var o clusterRTOpts
	c := newCmd("clusterRT", "List All clusters Message Send RT.")
	fs := c.Flags()
	stringOpt(fs, &o.amount, "a", "amount", "message amount | default 100")
	stringOpt(fs, &o.size, "s", "size", "message size | default 128 Byte")
	stringOpt(fs, &o.cluster, "c", "cluster", "cluster name | default display all cluster")
	stringOpt(fs, &o.printLog, "p", "printLog", "print as tlog | default false")
	stringOpt(fs, &o.room, "m", "machineRoom", "machine room name | default noname")
	stringOpt(fs, &o.interval, "i", "interval", "print interval | default 10 seconds")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error { return a.clusterRT(cmd.Context(), cmd, c, o) })
	return c
}

// clusterRT is CLusterSendMsgRTCommand: every -i seconds, for each broker
// of each cluster (or -c's), -a messages of -s bytes to the topic named
// like the broker, and a line with the average time of all sends but the
// first and the success and failure counts (with -p true: a
// "time|room|cluster|broker|rt" line, the time in GMT+8). It runs until
// interrupted, as Java.
func (a *app) clusterRT(ctx context.Context, cmd *cobra.Command, c *admin.Client, o clusterRTOpts) error {
	changed := cmd.Flags().Changed
	amount, size, interval := int64(100), int64(128), int64(10)
	if err := parseChanged(changed,
		parsedOpt("amount", "a", o.amount, javaLong, &amount),
		parsedOpt("size", "s", o.size, javaLong, &size),
		parsedOpt("interval", "i", o.interval, javaLong, &interval),
	); err != nil {
		return err
	}
	if size < 0 || size > math.MaxInt32 {
		return usagef("invalid value %d for -s: not a message size", size)
	}
	tlog := changed("printLog") && javaBool(o.printLog)
	room := "noname"
	if changed("machineRoom") {
		room = strings.TrimSpace(o.room)
	}
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	clusters := javaHashOrder(sortedKeys(ci.ClusterAddrTable), hashMapDefault, false)
	if changed("cluster") {
		clusters = []string{strings.TrimSpace(o.cluster)}
	}
	w := a.env.Stdout
	body := []byte(strings.Repeat("a", int(size)))
	group := fmt.Sprint(a.env.Now().UnixMilli())
	gmt8 := time.FixedZone("GMT+8", 8*3600)
	return a.withProducer(ctx, group, func(p *client.Producer) error {
		if !tlog {
			fmt.Fprintf(w, "%-24s  %-24s  %-4s  %-8s  %-8s\n", "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount")
		}
		for {
			for _, cluster := range clusters {
				names, ok := ci.ClusterAddrTable[cluster]
				if !ok {
					fmt.Fprintf(w, "cluster [%s] not exist", cluster)
					break
				}
				for _, broker := range javaHashOrder(names, hashMapDefault, false) {
					var elapsed int64
					okCount, failCount := 0, 0
					for i := int64(0); i < amount; i++ {
						start := time.Now()
						if _, err := p.SendSync(ctx, &message.Message{Topic: broker, Body: body}); err != nil {
							failCount++
						} else {
							okCount++
						}
						if i != 0 {
							elapsed += time.Since(start).Milliseconds()
						}
					}
					if ctx.Err() != nil {
						return nil
					}
					if !tlog {
						fmt.Fprintf(w, "%-24s  %-24s  %-8s  %-16d  %-16d\n", cluster, broker, javaAvg(elapsed, amount), okCount, failCount)
					} else {
						rt := "NaN"
						if amount > 1 {
							rt = javaFixed(float64(elapsed)/float64(amount-1), 0)
						}
						fmt.Fprintf(w, "%s|%s|%s|%s|%s\n", a.env.Now().In(gmt8).Format("2006-01-02 15:04:05"), room, cluster, broker, rt)
					}
				}
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Duration(interval) * time.Second):
			}
		}
	})
}
