package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// The message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey,
// queryMsgByOffset, sendMessage and consumeMessage (rocketmq-tools 5.5.0
// org.apache.rocketmq.tools.command.message). Queries go through
// admin.Client; sends, pulls and queue offsets through pkg/client, as the
// Java tool uses a producer and a pull consumer.

// toolsConsumerGroup is the Java tool's pull consumer group
// (MixAll.TOOLS_CONSUMER_GROUP).
const toolsConsumerGroup = "TOOLS_CONSUMER"

// clientShutdownTimeout bounds the shutdown of the producer or consumer a
// command started.
const clientShutdownTimeout = 3 * time.Second

// commonConfig is the pkg/client configuration of a command's producer or
// consumer: the same nameservers and logger as the admin client, and the
// Java tool's instance name (the current time in ms).
func (a *app) commonConfig() (client.CommonConfig, error) {
	ns := a.nameServers()
	if len(ns) == 0 {
		return client.CommonConfig{}, admin.ErrNoNameServer
	}
	tc, err := a.tlsConfig()
	if err != nil {
		return client.CommonConfig{}, err
	}
	return client.CommonConfig{
		NameServers:  ns,
		InstanceName: strconv.FormatInt(a.env.Now().UnixMilli(), 10),
		Remoting:     remoting.ClientConfig{TLS: tc},
		Logger:       a.env.Log,
	}, nil
}

// startStopper is what withStarted needs of a pkg/client producer or
// consumer.
type startStopper interface {
	Start() error
	Shutdown(context.Context) error
}

// withStarted creates a client (kind names it in the error) from the
// command's common configuration, starts it, runs f with it and shuts it
// down afterwards, even when ctx is already done.
func withStarted[C startStopper](ctx context.Context, a *app, kind string, create func(client.CommonConfig) (C, error), f func(C) error) error {
	cc, err := a.commonConfig()
	if err != nil {
		return err
	}
	c, err := create(cc)
	if err != nil {
		return fmt.Errorf("create %s: %w", kind, err)
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clientShutdownTimeout)
		defer cancel()
		_ = c.Shutdown(sctx)
	}()
	return f(c)
}

// withPullConsumer runs f with a started pull consumer of group, shut down
// afterwards.
func (a *app) withPullConsumer(ctx context.Context, group string, f func(pc *client.PullConsumer) error) error {
	return withStarted(ctx, a, "pull consumer", func(cc client.CommonConfig) (*client.PullConsumer, error) {
		return client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: cc, Group: group})
	}, f)
}

// withProducer runs f with a started producer of group, shut down
// afterwards.
func (a *app) withProducer(ctx context.Context, group string, f func(p *client.Producer) error) error {
	return withStarted(ctx, a, "producer", func(cc client.CommonConfig) (*client.Producer, error) {
		return client.NewProducer(client.ProducerConfig{CommonConfig: cc, Group: group})
	}, f)
}

// splitNonBlank is StringUtils.split(s, ",") without blank entries, trimmed.
func splitNonBlank(s string) []string { return admin.SplitList(s, ",") }

// ---- message detail (QueryMsgByIdSubCommand.printMsg) ----

// detailStyle says which command's layout printDetail follows.
type detailStyle int

const (
	styleByID      detailStyle = iota // queryMsgById, queryMsgByOffset
	styleUniqueKey                    // queryMsgByUniqueKey
)

// showDetail writes the body file, prints the message as the Java tool
// does (text) and returns its JSON form; charset (from -f) adds the body.
func (a *app) showDetail(ctx context.Context, c *admin.Client, m *shownMessage, style detailStyle, index int, charset string) (messageJSON, error) {
	path, err := a.writeBodyFile(m, index)
	if err != nil {
		return messageJSON{}, err
	}
	j := m.json()
	j.BodyPath = path
	w := a.env.Stdout
	text := !a.json()
	if charset != "" {
		body, err := decodeCharset(m.Body, charset)
		if err != nil {
			return messageJSON{}, err
		}
		j.Body = &body
	}
	if text {
		if style == styleByID {
			fmt.Fprintf(w, "%-20s %s\n", "OffsetID:", m.OffsetMsgID())
		}
		fmt.Fprintf(w, "%-20s %s\n", "Topic:", m.Topic)
		fmt.Fprintf(w, "%-20s %s\n", "Tags:", "["+m.nullableProp(message.PropertyTags)+"]")
		fmt.Fprintf(w, "%-20s %s\n", "Keys:", "["+m.nullableProp(message.PropertyKeys)+"]")
		fmt.Fprintf(w, "%-20s %d\n", "Queue ID:", m.QueueID)
		fmt.Fprintf(w, "%-20s %d\n", "Queue Offset:", m.QueueOffset)
		fmt.Fprintf(w, "%-20s %d\n", "CommitLog Offset:", m.CommitLogOffset)
		fmt.Fprintf(w, "%-20s %d\n", "Reconsume Times:", m.ReconsumeTimes)
		fmt.Fprintf(w, "%-20s %s\n", "Born Timestamp:", humanTime2(m.BornTimestamp, a.env.Location))
		fmt.Fprintf(w, "%-20s %s\n", "Store Timestamp:", humanTime2(m.StoreTimestamp, a.env.Location))
		fmt.Fprintf(w, "%-20s %s\n", "Born Host:", javaHostPort(m.BornHost))
		fmt.Fprintf(w, "%-20s %s\n", "Store Host:", javaHostPort(m.StoreHost))
		fmt.Fprintf(w, "%-20s %d\n", "System Flag:", m.SysFlag)
		fmt.Fprintf(w, "%-20s %s\n", "Properties:", m.propsString())
		fmt.Fprintf(w, "%-20s %s\n", "Message Body Path:", path)
		if style == styleByID && j.Body != nil {
			fmt.Fprintf(w, "%-20s %s\n", "Message Body:", *j.Body)
		}
	}
	tracks, err := a.messageTracks(ctx, c, m)
	if err != nil {
		// The Java tool prints the stack trace and carries on.
		a.warn("message track of %s: %v", m.ClientMsgID(), err)
		j.TrackError = err.Error()
		return j, nil
	}
	j.Tracks = tracks
	if text {
		if len(tracks) == 0 {
			fmt.Fprintf(w, "\n\nWARN: No Consumer")
		} else {
			fmt.Fprintf(w, "\n\n")
			for _, t := range tracks {
				if style == styleByID {
					fmt.Fprintf(w, "%s\n", t)
				} else {
					fmt.Fprintf(w, "%s", t)
				}
			}
		}
	}
	if j.Tracks == nil {
		j.Tracks = []admin.MessageTrack{}
	}
	return j, nil
}

// messageTracks is admin.MessageTrackDetail in the Java tool's order (the
// groups come in a HashSet).
func (a *app) messageTracks(ctx context.Context, c *admin.Client, m *shownMessage) ([]admin.MessageTrack, error) {
	sm := &admin.StoredMessage{Message: m.Message, PropertyKeys: m.keys}
	tracks, err := c.MessageTrackDetail(ctx, sm)
	if err != nil {
		return nil, err
	}
	groups := make([]string, len(tracks))
	for i, t := range tracks {
		groups[i] = t.ConsumerGroup
	}
	order := javaHashOrder(groups, hashMapDefault, false)
	out := make([]admin.MessageTrack, 0, len(order))
	for _, g := range order {
		i := slices.IndexFunc(tracks, func(t admin.MessageTrack) bool { return t.ConsumerGroup == g })
		out = append(out, tracks[i])
	}
	return out, nil
}

// ---- queryMsgById ----

type queryMsgByIDOpts struct {
	topic, msgID, group, clientID, resend, unit, bodyFormat, cluster string
}

func newQueryMsgByID(a *app) *cobra.Command {
	var o queryMsgByIDOpts
	c := newCmd("queryMsgById", "Query Message by Id.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.msgID, "i", "msgId", "Message Id")
	stringOpt(fs, &o.group, "g", "consumerGroup", "consumer group name")
	stringOpt(fs, &o.clientID, "d", "clientId", "The consumer's client id")
	stringOpt(fs, &o.resend, "s", "sendMessage", "resend message")
	stringOpt(fs, &o.unit, "u", "unitName", "unit name")
	stringOpt(fs, &o.bodyFormat, "f", "bodyFormat", "print message body by the specified format")
	stringOpt(fs, &o.cluster, "c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
	markRequired(c, "topic", "msgId")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.queryMsgByID(cmd.Context(), cmd, o) })
	return c
}

// resendJSON is one message re-sent by queryMsgById -s true.
type resendJSON struct {
	OriginalMsgID string          `json:"originalMsgId"`
	SendResult    *sendResultJSON `json:"sendResult"`
}

// directJSON is one message pushed by queryMsgById -g -d.
type directJSON struct {
	MsgID  string                              `json:"msgId"`
	Result *admin.ConsumeMessageDirectlyResult `json:"result,omitempty"`
	Error  string                              `json:"error,omitempty"`
}

func (a *app) queryMsgByID(ctx context.Context, cmd *cobra.Command, o queryMsgByIDOpts) error {
	topic := strings.TrimSpace(o.topic)
	ids := splitNonBlank(o.msgID)
	cluster := strings.TrimSpace(o.cluster)
	changed := cmd.Flags().Changed
	charset := ""
	if changed("bodyFormat") {
		charset = strings.TrimSpace(o.bodyFormat)
		if _, err := decodeCharset(nil, charset); err != nil {
			return err
		}
	}
	return a.withClient(func(c *admin.Client) error {
		w := a.env.Stdout
		switch {
		case changed("consumerGroup") && changed("clientId"):
			group, clientID := strings.TrimSpace(o.group), strings.TrimSpace(o.clientID)
			var out []directJSON
			failed := 0
			for _, id := range ids {
				res, err := a.pushMessage(ctx, c, cluster, group, clientID, topic, id)
				d := directJSON{MsgID: id, Result: res}
				if err != nil {
					// The Java tool prints the stack trace and goes on.
					a.warn("push message %s to %s of %s: %v", id, clientID, group, err)
					d.Error = err.Error()
					failed++
				} else if res == nil {
					if !a.json() {
						fmt.Fprintf(w, "this %s client is not push consumer ,not support direct push \n", clientID)
					}
					d.Error = "not a push consumer"
				} else if !a.json() {
					fmt.Fprintf(w, "%s", res)
				}
				out = append(out, d)
			}
			if a.json() {
				if err := writeJSONField(w, "direct", out); err != nil {
					return err
				}
			}
			if failed > 0 {
				return &partialError{failed}
			}
			return nil
		case changed("sendMessage"):
			if !javaBool(o.resend) {
				if a.json() {
					return writeJSONField(w, "resent", []resendJSON{})
				}
				return nil
			}
			return a.resendByID(ctx, c, cluster, topic, ids)
		}
		var out []messageJSON
		for _, id := range ids {
			sm, viewErr, err := c.QueryMessageByID(ctx, cluster, topic, id, a.env.Now())
			if err != nil {
				if viewErr != nil && !errors.Is(viewErr, message.ErrBadMsgID) {
					return fmt.Errorf("message %s: view by offset id failed (%v), then by unique key: %w", id, viewErr, err)
				}
				return fmt.Errorf("message %s: %w", id, err)
			}
			j, err := a.showDetail(ctx, c, fromStored(sm), styleByID, 0, charset)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		if a.json() {
			return writeJSONField(w, "messages", out)
		}
		return nil
	})
}

// pushMessage is the Java tool's pushMsg: when the client is a push
// consumer (307), ask it to consume the message (309); nil when it is not.
func (a *app) pushMessage(ctx context.Context, c *admin.Client, cluster, group, clientID, topic, id string) (*admin.ConsumeMessageDirectlyResult, error) {
	info, err := c.GetConsumerRunningInfo(ctx, group, clientID, false)
	if err != nil {
		return nil, err
	}
	if info.Properties["PROP_CONSUME_TYPE"] != "CONSUME_PASSIVELY" {
		return nil, nil
	}
	sm, _, err := c.QueryMessageByID(ctx, cluster, topic, id, a.env.Now())
	if err != nil {
		return nil, err
	}
	msgID := id
	if sm.UniqKey() != "" {
		msgID = sm.OffsetMsgID()
	}
	return c.ConsumeMessageDirectly(ctx, sm.StoreHost.String(), group, clientID, topic, msgID)
}

// resendByID is the Java tool's sendMsg: each message is queried and sent
// again as it is (same UNIQ_KEY) by producer group ReSendMsgById.
func (a *app) resendByID(ctx context.Context, c *admin.Client, cluster, topic string, ids []string) error {
	w := a.env.Stdout
	var out []resendJSON
	failed := 0
	err := a.withProducer(ctx, "ReSendMsgById", func(p *client.Producer) error {
		for _, id := range ids {
			sm, _, err := c.QueryMessageByID(ctx, cluster, topic, id, a.env.Now())
			if err != nil {
				if errors.Is(err, admin.ErrNoMessage) {
					if !a.json() {
						fmt.Fprintf(w, "no message. msgId=%s", id)
					}
					continue
				}
				a.warn("resend %s: %v", id, err)
				failed++
				continue
			}
			if !a.json() {
				fmt.Fprintf(w, "prepare resend msg. originalMsgId=%s", id)
			}
			m := &message.Message{Topic: sm.Topic, Flag: sm.Flag, Body: sm.Body, Properties: sm.Properties}
			res, err := p.SendSync(ctx, m)
			if err != nil {
				a.warn("resend %s: %v", id, err)
				failed++
				continue
			}
			if !a.json() {
				fmt.Fprintf(w, "%s", javaSendResult(res))
			}
			out = append(out, resendJSON{OriginalMsgID: id, SendResult: sendResultOf(res)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if a.json() {
		if out == nil {
			out = []resendJSON{}
		}
		if err := writeJSONField(w, "resent", out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &partialError{failed}
	}
	return nil
}

// javaSendResult is SendResult.toString.
func javaSendResult(r *client.SendResult) string {
	recall := "null"
	if r.RecallHandle != "" {
		recall = r.RecallHandle
	}
	return fmt.Sprintf("SendResult [sendStatus=%s, msgId=%s, offsetMsgId=%s, messageQueue=%s, queueOffset=%d, recallHandle=%s]",
		r.Status, r.MsgID, r.OffsetMsgID, javaMessageQueue(r.Queue), r.QueueOffset, recall)
}

// ---- queryMsgByKey ----

type queryMsgByKeyOpts struct {
	topic, key, begin, end, maxNum, cluster, keyType, lastKey string
}

func newQueryMsgByKey(a *app) *cobra.Command {
	var o queryMsgByKeyOpts
	c := newCmd("queryMsgByKey", "Query Message by Key.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "Topic name")
	stringOpt(fs, &o.key, "k", "msgKey", "Message Key")
	stringOpt(fs, &o.begin, "b", "beginTimestamp", "Begin timestamp(ms). default:0, eg:1676730526212")
	stringOpt(fs, &o.end, "e", "endTimestamp", "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212")
	stringOpt(fs, &o.maxNum, "m", "maxNum", "The maximum number of messages returned by the query, default:64")
	stringOpt(fs, &o.cluster, "c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
	stringOpt(fs, &o.keyType, "p", "keyType", "Index key type, default index key type is K, you can use K for keys OR T for tags")
	stringOpt(fs, &o.lastKey, "l", "lastKey", "Last Key")
	markRequired(c, "topic", "msgKey")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.queryMsgByKey(cmd.Context(), cmd, o) })
	return c
}

// keyHitJSON is one row of queryMsgByKey.
type keyHitJSON struct {
	MsgID       string `json:"msgId"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	IndexKey    string `json:"indexKey"`
	messageJSON
}

func (a *app) queryMsgByKey(ctx context.Context, cmd *cobra.Command, o queryMsgByKeyOpts) error {
	changed := cmd.Flags().Changed
	req := admin.QueryMessageRequest{
		Topic: strings.TrimSpace(o.topic), Key: strings.TrimSpace(o.key),
		MaxNum: 64, Begin: 0, End: math.MaxInt64, IndexType: admin.IndexKeyType,
	}
	if err := parseQueryLimits(changed, &req, javaLong, o.begin, o.end, o.maxNum, "m"); err != nil {
		return err
	}
	if changed("cluster") {
		req.Cluster = strings.TrimSpace(o.cluster)
	}
	if changed("keyType") {
		req.IndexType = strings.TrimSpace(o.keyType)
		if req.IndexType != admin.IndexKeyType && req.IndexType != admin.IndexTagType {
			return usagef("index type error, just support K for keys or T for tags")
		}
	}
	if changed("lastKey") {
		req.LastKey = strings.TrimSpace(o.lastKey)
	}
	return a.withClient(func(c *admin.Client) error {
		res, err := c.QueryMessage(ctx, req)
		if err != nil {
			return err
		}
		w := a.env.Stdout
		rows := make([]keyHitJSON, 0, len(res.Messages))
		if !a.json() {
			fmt.Fprintf(w, "%-50s %4s %40s %-200s\n", "#Message ID", "#QID", "#Offset", "#IndexKey")
		}
		for _, sm := range res.Messages {
			hour := sm.StoreTimestamp
			if hour > 0 {
				hour = hour / 3600000 * 3600000
			}
			indexKey := fmt.Sprintf("%d@%s@%s@%s@%s@%d", hour, req.Topic, req.IndexType, req.Key, sm.ClientMsgID(), sm.CommitLogOffset)
			if !a.json() {
				fmt.Fprintf(w, "%-50s %4d %40d %-200s\n", sm.ClientMsgID(), sm.QueueID, sm.QueueOffset, indexKey)
			}
			rows = append(rows, keyHitJSON{MsgID: sm.ClientMsgID(), QueueID: sm.QueueID, QueueOffset: sm.QueueOffset, IndexKey: indexKey, messageJSON: fromStored(sm).json()})
		}
		if a.json() {
			return writeJSON(w, struct {
				IndexLastUpdateTimestamp int64        `json:"indexLastUpdateTimestamp"`
				Messages                 []keyHitJSON `json:"messages"`
			}{res.IndexLastUpdateTimestamp, rows})
		}
		return nil
	})
}

// ---- queryMsgByUniqueKey ----

type queryMsgByUniqueKeyOpts struct {
	msgID, group, clientID, topic, cluster, start, end string
	showAll                                            bool
}

func newQueryMsgByUniqueKey(a *app) *cobra.Command {
	var o queryMsgByUniqueKeyOpts
	c := newCmd("queryMsgByUniqueKey", "Query Message by Unique key.")
	fs := c.Flags()
	stringOpt(fs, &o.msgID, "i", "msgId", "Message Id")
	stringOpt(fs, &o.group, "g", "consumerGroup", "consumer group name")
	stringOpt(fs, &o.clientID, "d", "clientId", "The consumer's client id")
	stringOpt(fs, &o.topic, "t", "topic", "The topic of msg")
	boolOpt(fs, &o.showAll, "a", "showAll", "Print all message, the limit is 32")
	stringOpt(fs, &o.cluster, "c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
	stringOpt(fs, &o.start, "s", "startTime", "startTime")
	stringOpt(fs, &o.end, "e", "endTime", "endTime")
	markRequired(c, "msgId", "topic")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.queryMsgByUniqueKey(cmd.Context(), cmd, o) })
	return c
}

// uniqKeyWindow is how far around now queryMsgByUniqueKey looks without -s
// and -e (Java: ±36 hours).
const uniqKeyWindow = 36 * time.Hour

func (a *app) queryMsgByUniqueKey(ctx context.Context, cmd *cobra.Command, o queryMsgByUniqueKeyOpts) error {
	changed := cmd.Flags().Changed
	id, topic := strings.TrimSpace(o.msgID), strings.TrimSpace(o.topic)
	cluster := ""
	if changed("cluster") {
		cluster = strings.TrimSpace(o.cluster)
	}
	now := a.env.Now()
	req := admin.QueryMessageRequest{
		Topic: topic, Key: id, MaxNum: admin.DefaultUniqKeyMaxNum, Unique: true, Cluster: cluster,
		Begin: now.Add(-uniqKeyWindow).UnixMilli(), End: now.Add(uniqKeyWindow).UnixMilli(),
	}
	start, end := strings.TrimSpace(o.start), strings.TrimSpace(o.end)
	if changed("startTime") && changed("endTime") && start != "" && end != "" {
		var err error
		if req.Begin, err = javaLong("s", start); err != nil {
			return err
		}
		if req.End, err = javaLong("e", end); err != nil {
			return err
		}
	}
	return a.withClient(func(c *admin.Client) error {
		w := a.env.Stdout
		if changed("consumerGroup") && changed("clientId") {
			group, clientID := strings.TrimSpace(o.group), strings.TrimSpace(o.clientID)
			var props map[string]string
			info, err := c.GetConsumerRunningInfo(ctx, group, clientID, false)
			if err == nil {
				props = info.Properties
			} else {
				a.warn("get consumer running info of %s: %v", clientID, err)
				if !a.json() {
					fmt.Fprintf(w, "get consumer runtime info for %s client failed \n", clientID)
				}
			}
			if props["PROP_CONSUME_TYPE"] != "CONSUME_PASSIVELY" {
				return a.emit(directJSON{MsgID: id, Error: "get consumer info failed or not a push consumer"}, func(w io.Writer) {
					fmt.Fprintf(w, "get consumer info failed or this %s client is not push consumer, not support direct push \n", clientID)
				})
			}
			sm, _, err := c.QueryMessageByID(ctx, cluster, topic, id, now)
			if err != nil {
				return err
			}
			msgID := id
			if sm.UniqKey() != "" {
				msgID = sm.OffsetMsgID()
			}
			res, err := c.ConsumeMessageDirectly(ctx, sm.StoreHost.String(), group, clientID, topic, msgID)
			if err != nil {
				return err
			}
			return a.emit(directJSON{MsgID: id, Result: res}, func(w io.Writer) {
				fmt.Fprintf(w, "%s", res)
			})
		}
		res, err := c.QueryMessage(ctx, req)
		if err != nil {
			return err
		}
		msgs := res.Messages
		sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].StoreTimestamp < msgs[j].StoreTimestamp })
		n := 1
		if o.showAll {
			n = len(msgs)
		}
		out := make([]messageJSON, 0, n)
		for i := 0; i < n; i++ {
			j, err := a.showDetail(ctx, c, fromStored(msgs[i]), styleUniqueKey, i, "")
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		if a.json() {
			return writeJSONField(w, "messages", out)
		}
		return nil
	})
}

// ---- queryMsgByOffset ----

type queryMsgByOffsetOpts struct {
	topic, broker, queueID, offset, bodyFormat, routeTopic string
}

func newQueryMsgByOffset(a *app) *cobra.Command {
	var o queryMsgByOffsetOpts
	c := newCmd("queryMsgByOffset", "Query Message by offset.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.broker, "b", "brokerName", "Broker Name")
	stringOpt(fs, &o.queueID, "i", "queueId", "Queue Id")
	stringOpt(fs, &o.offset, "o", "offset", "Queue Offset")
	stringOpt(fs, &o.bodyFormat, "f", "bodyFormat", "print message body by the specified format")
	stringOpt(fs, &o.routeTopic, "r", "routeTopic", "the topic which is used to find route info")
	markRequired(c, "topic", "brokerName", "queueId", "offset")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.queryMsgByOffset(cmd.Context(), cmd, o) })
	return c
}

func (a *app) queryMsgByOffset(ctx context.Context, cmd *cobra.Command, o queryMsgByOffsetOpts) error {
	topic, broker := strings.TrimSpace(o.topic), strings.TrimSpace(o.broker)
	qid, err := javaInt("i", o.queueID)
	if err != nil {
		return err
	}
	offset, err := javaLong("o", o.offset)
	if err != nil {
		return err
	}
	routeTopic := strings.TrimSpace(o.routeTopic)
	charset := ""
	if cmd.Flags().Changed("bodyFormat") {
		charset = strings.TrimSpace(o.bodyFormat)
		if _, err := decodeCharset(nil, charset); err != nil {
			return err
		}
	}
	mq := protocol.MessageQueue{Topic: topic, BrokerName: broker, QueueID: qid}
	return a.withClient(func(c *admin.Client) error {
		return a.withPullConsumer(ctx, toolsConsumerGroup, func(pc *client.PullConsumer) error {
			if routeTopic != "" && routeTopic != topic {
				// Learn the broker's address from another topic's route
				// (LMQ), as the Java tool's first pull does.
				if _, err := pc.Queues(ctx, routeTopic); err != nil {
					a.env.Log.Debug("mqadmin: route topic", "topic", routeTopic, "err", err)
				}
			}
			res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: offset, MaxNums: 1, Expression: "*"})
			if err != nil {
				return err
			}
			var out []messageJSON
			if res.Status == client.PullFound && len(res.Messages) > 0 {
				j, err := a.showDetail(ctx, c, fromPulled(res.Messages[0], broker), styleByID, 0, charset)
				if err != nil {
					return err
				}
				out = append(out, j)
			}
			if a.json() {
				if out == nil {
					out = []messageJSON{}
				}
				return writeJSON(a.env.Stdout, struct {
					PullStatus string        `json:"pullStatus"`
					Messages   []messageJSON `json:"messages"`
				}{res.Status.String(), out})
			}
			return nil
		})
	})
}

// ---- sendMessage ----

type sendMessageOpts struct {
	topic, body, keys, tags, broker, queueID, trace string
}

func newSendMessage(a *app) *cobra.Command {
	var o sendMessageOpts
	c := newCmd("sendMessage", "Send a message.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "Topic name")
	stringOpt(fs, &o.body, "p", "body", "UTF-8 string format of the message body")
	stringOpt(fs, &o.keys, "k", "key", "Message keys")
	stringOpt(fs, &o.tags, "c", "tags", "Message tags")
	stringOpt(fs, &o.broker, "b", "broker", "Send message to target broker")
	stringOpt(fs, &o.queueID, "i", "qid", "Send message to target queue")
	stringOpt(fs, &o.trace, "m", "msgTraceEnable", "Message Trace Enable, Default: false")
	markRequired(c, "topic", "body")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.sendMessage(cmd.Context(), cmd, o) })
	return c
}

// sendResultJSON is a send's outcome in --output json.
type sendResultJSON struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int    `json:"queueId"`
	SendStatus  string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
	Topic       string `json:"topic"`
}

func sendResultOf(r *client.SendResult) *sendResultJSON {
	return &sendResultJSON{
		BrokerName: r.Queue.BrokerName, QueueID: r.Queue.QueueID, SendStatus: r.Status.String(),
		MsgID: r.MsgID, OffsetMsgID: r.OffsetMsgID, QueueOffset: r.QueueOffset, Topic: r.Queue.Topic,
	}
}

func (a *app) sendMessage(ctx context.Context, cmd *cobra.Command, o sendMessageOpts) error {
	changed := cmd.Flags().Changed
	topic := strings.TrimSpace(o.topic)
	m := &message.Message{Topic: topic, Body: []byte(strings.TrimSpace(o.body))}
	// new Message(topic, tags, keys, body): empty tags or keys are not set;
	// WAIT=true.
	if changed("tags") {
		if t := strings.TrimSpace(o.tags); t != "" {
			m.SetProperty(message.PropertyTags, t)
		}
	}
	if changed("key") {
		if k := strings.TrimSpace(o.keys); k != "" {
			m.SetProperty(message.PropertyKeys, k)
		}
	}
	m.SetWaitStoreMsgOK(true)
	var opts []client.SendOption
	if changed("qid") {
		if !changed("broker") {
			return usagef("Broker name must be set if the queue is chosen!")
		}
		qid, err := javaInt("i", o.queueID)
		if err != nil {
			return err
		}
		if qid > -1 {
			opts = append(opts, client.WithQueue(protocol.MessageQueue{Topic: topic, BrokerName: strings.TrimSpace(o.broker), QueueID: qid}))
		}
	}
	// -m (message trace) is accepted; this tool does not write traces.
	group := strconv.FormatInt(a.env.Now().UnixMilli(), 10)
	return a.withProducer(ctx, group, func(p *client.Producer) error {
		res, err := p.SendSync(ctx, m, opts...)
		if err != nil {
			return err
		}
		return a.emit(sendResultOf(res), func(w io.Writer) {
			fmt.Fprintf(w, "%-32s  %-4s  %-20s    %s\n", "#Broker Name", "#QID", "#Send Result", "#MsgId")
			fmt.Fprintf(w, "%-32s  %-4s  %-20s    %s\n", res.Queue.BrokerName, strconv.Itoa(res.Queue.QueueID), res.Status, res.MsgID)
		})
	})
}

// ---- consumeMessage ----

type consumeMessageOpts struct {
	topic, broker, queueID, offset, group, begin, end, count string
}

func newConsumeMessage(a *app) *cobra.Command {
	var o consumeMessageOpts
	c := newCmd("consumeMessage", "Consume message.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "Topic name")
	stringOpt(fs, &o.broker, "b", "brokerName", "Broker name")
	stringOpt(fs, &o.queueID, "i", "queueId", "Queue Id")
	stringOpt(fs, &o.offset, "o", "offset", "Queue offset")
	stringOpt(fs, &o.group, "g", "consumerGroup", "Consumer group name")
	stringOpt(fs, &o.begin, "s", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.end, "e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.count, "c", "MessageNumber", "Number of message to be consumed")
	markRequired(c, "topic")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.consumeMessage(cmd.Context(), cmd, o) })
	return c
}

// consumedQueueJSON is one queue read by consumeMessage.
type consumedQueueJSON struct {
	Queue      protocol.MessageQueue `json:"queue"`
	MinOffset  int64                 `json:"minOffset"`
	MaxOffset  int64                 `json:"maxOffset"`
	Messages   []messageJSON         `json:"messages"`
	LastStatus string                `json:"lastStatus,omitempty"`
	NextOffset int64                 `json:"nextOffset"`
	Error      string                `json:"error,omitempty"`
}

// consumeRun is one consumeMessage invocation.
type consumeRun struct {
	a      *app
	pc     *client.PullConsumer
	w      io.Writer
	queues []consumedQueueJSON
	failed int
}

func (a *app) consumeMessage(ctx context.Context, cmd *cobra.Command, o consumeMessageOpts) error {
	changed := cmd.Flags().Changed
	topic := strings.TrimSpace(o.topic)
	group := toolsConsumerGroup
	if changed("consumerGroup") {
		group = strings.TrimSpace(o.group)
	}
	count := int64(128)
	var err error
	if changed("MessageNumber") {
		if count, err = javaLong("c", o.count); err != nil {
			return err
		}
		if count <= 0 {
			return usagef("Please input a positive messageNumber!")
		}
	}
	byQueue := false
	var broker string
	var qid int
	var offset int64
	if changed("brokerName") {
		broker = strings.TrimSpace(o.broker)
	}
	if changed("queueId") {
		if !changed("brokerName") {
			return usagef("Please set the brokerName before queueId!")
		}
		if qid, err = javaInt("i", o.queueID); err != nil {
			return err
		}
		byQueue = true
	}
	if changed("offset") {
		if !byQueue {
			return usagef("Please set queueId before offset!")
		}
		if offset, err = javaLong("o", o.offset); err != nil {
			return err
		}
	}
	now := a.env.Now().UnixMilli()
	var begin, end int64
	if changed("beginTimestamp") {
		if begin, err = javaTimestamp("s", strings.TrimSpace(o.begin), a.env.Location); err != nil {
			return err
		}
		if begin > now {
			return usagef("Please set the beginTimestamp before now!")
		}
	}
	if changed("endTimestamp") {
		if end, err = javaTimestamp("e", strings.TrimSpace(o.end), a.env.Location); err != nil {
			return err
		}
		if end > now {
			return usagef("Please set the endTimestamp before now!")
		}
		if begin > end {
			return usagef("Please make sure that the beginTimestamp is less than or equal to the endTimestamp")
		}
	}
	return a.withPullConsumer(ctx, group, func(pc *client.PullConsumer) error {
		r := &consumeRun{a: a, pc: pc, w: a.env.Stdout}
		var err error
		if byQueue {
			err = r.byQueue(ctx, protocol.MessageQueue{Topic: topic, BrokerName: broker, QueueID: qid}, offset, count, begin, end)
		} else {
			err = r.all(ctx, topic, count, begin, end)
		}
		if err != nil {
			return err
		}
		if a.json() {
			if r.queues == nil {
				r.queues = []consumedQueueJSON{}
			}
			if err := writeJSON(r.w, struct {
				Queues []consumedQueueJSON `json:"queues"`
			}{r.queues}); err != nil {
				return err
			}
		}
		if r.failed > 0 {
			return &partialError{r.failed}
		}
		return nil
	})
}

func (r *consumeRun) text() bool { return !r.a.json() }

// bounds returns a queue's [min, max] as the Java tool computes them: the
// min and max offsets, or the offsets searched for the begin and end times.
func (r *consumeRun) bounds(ctx context.Context, mq protocol.MessageQueue, begin, end int64) (int64, int64, error) {
	minOff, err := r.pc.GetMinOffset(ctx, mq)
	if err != nil {
		return 0, 0, err
	}
	maxOff, err := r.pc.GetMaxOffset(ctx, mq)
	if err != nil {
		return 0, 0, err
	}
	if begin > 0 {
		if minOff, err = r.pc.SearchOffset(ctx, mq, time.UnixMilli(begin)); err != nil {
			return 0, 0, err
		}
	}
	if end > 0 {
		if maxOff, err = r.pc.SearchOffset(ctx, mq, time.UnixMilli(end)); err != nil {
			return 0, 0, err
		}
	}
	return minOff, maxOff, nil
}

// all is executeDefault: every readable queue of the topic, in the Java
// tool's (HashSet) order, until count messages were asked for.
func (r *consumeRun) all(ctx context.Context, topic string, count, begin, end int64) error {
	queues, err := r.pc.Queues(ctx, topic)
	if err != nil {
		return err
	}
	left := count
	for _, mq := range javaHashSetOrder(queues) {
		if left == 0 {
			return nil
		}
		minOff, maxOff, err := r.bounds(ctx, mq, begin, end)
		if err != nil {
			return err
		}
		if maxOff-minOff > left {
			if r.text() {
				fmt.Fprintf(r.w, "The older %d message of the %d queue will be provided\n", left, mq.QueueID)
			}
			maxOff = minOff + left - 1
			left = 0
		} else {
			left = left - (maxOff - minOff) - 1
		}
		r.pullQueue(ctx, mq, minOff, maxOff)
	}
	return nil
}

// byQueue is executeByCondition: one queue from offset.
func (r *consumeRun) byQueue(ctx context.Context, mq protocol.MessageQueue, offset, count, begin, end int64) error {
	minOff, maxOff, err := r.bounds(ctx, mq, begin, end)
	if err != nil {
		return err
	}
	if offset > maxOff {
		if r.text() {
			fmt.Fprintf(r.w, "%s no matched msg, offset=%d\n", javaMessageQueue(mq), offset)
		}
		r.queues = append(r.queues, consumedQueueJSON{Queue: mq, MinOffset: minOff, MaxOffset: maxOff, Messages: []messageJSON{}, NextOffset: offset})
		return nil
	}
	minOff = max(minOff, offset)
	if maxOff-minOff > count {
		if r.text() {
			fmt.Fprintf(r.w, "The oldler %d message will be provided\n", count)
		}
		maxOff = minOff + count - 1
	}
	r.pullQueue(ctx, mq, minOff, maxOff)
	return nil
}

// pullQueue is pullMessageByQueue: pull [minOff, maxOff] and print what
// comes back. A failed pull ends this queue (the Java tool prints the
// stack trace and goes on).
func (r *consumeRun) pullQueue(ctx context.Context, mq protocol.MessageQueue, minOff, maxOff int64) {
	q := consumedQueueJSON{Queue: mq, MinOffset: minOff, MaxOffset: maxOff, Messages: []messageJSON{}, NextOffset: minOff}
	defer func() { r.queues = append(r.queues, q) }()
	for off := minOff; off <= maxOff; {
		n := min(maxOff-off+1, math.MaxInt32)
		res, err := r.pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: int(n), Expression: "*"})
		if err != nil {
			r.a.warn("pull %s at %d: %v", javaMessageQueue(mq), off, err)
			q.Error = err.Error()
			r.failed++
			return
		}
		off = res.NextBeginOffset
		q.NextOffset = off
		q.LastStatus = res.Status.String()
		switch res.Status {
		case client.PullFound:
			if r.text() {
				fmt.Fprint(r.w, "Consume ok\n")
			}
			for _, m := range res.Messages {
				sm := fromPulled(m, mq.BrokerName)
				if r.text() {
					fmt.Fprintf(r.w, "MSGID: %s %s BODY: %s\n", sm.ClientMsgID(), sm.messageExtString(), javaUTF8(sm.Body))
				}
				j := sm.json()
				body := javaUTF8(sm.Body)
				j.Body = &body
				q.Messages = append(q.Messages, j)
			}
		case client.PullNoMatchedMsg:
			if r.text() {
				fmt.Fprintf(r.w, "%s no matched msg. status=%s, offset=%d\n", javaMessageQueue(mq), res.Status, off)
			}
		default: // NO_NEW_MSG, OFFSET_ILLEGAL
			if r.text() {
				fmt.Fprintf(r.w, "%s print msg finished. status=%s, offset=%d\n", javaMessageQueue(mq), res.Status, off)
			}
			return
		}
	}
}
