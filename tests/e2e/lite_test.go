package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
	"github.com/rmqgo/rmq/tests/framework"
)

// Lite-topic test parameters. The broker measures lite.topic.expiration in
// units of liteExpirationUnit instead of minutes (the test-only environment
// override), so an expiration of 3 is 3 s.
const (
	liteParent         = "OrderTopic"
	liteGroup          = "lite_cg"
	liteName           = "user_10086"
	liteLMQ            = "%LMQ%$OrderTopic$user_10086"
	liteExpirationUnit = time.Second
	liteExpiration     = 3
)

// liteClient speaks the raw lite requests, below any SDK consumer.
type liteClient struct {
	t    *testing.T
	rc   *remoting.Client
	addr string
}

func (c *liteClient) invoke(reqCode int32, ext map[string]string, body []byte) *remoting.Command {
	c.t.Helper()
	return remotingtest.Invoke(c.t, c.rc, c.addr, reqCode, ext, body)
}

func (c *liteClient) want(what string, resp *remoting.Command, wantCode int32, remark string) {
	c.t.Helper()
	remotingtest.Want(c.t, what, resp, wantCode, remark)
}

func (c *liteClient) send(topic string, qid int, body, lite string) *remoting.Command {
	c.t.Helper()
	ext := remotingtest.SendExt(c.t, "lite_pg", topic, qid,
		message.PropertyLiteTopic, lite, message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("LITE%d", time.Now().UnixNano()))
	return c.invoke(code.SendMessage, ext, []byte(body))
}

func (c *liteClient) subscribe(clientID, group string, lites []string) *remoting.Command {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"subscriptionSet": []any{map[string]any{
		"action": "PARTIAL_ADD", "clientId": clientID, "group": group, "topic": liteParent, "liteTopicSet": lites, "version": 1,
	}}})
	return c.invoke(code.LiteSubscriptionCtl, nil, body)
}

func litePopExt(clientID, group string, poll time.Duration) map[string]string {
	return map[string]string{
		"clientId": clientID, "consumerGroup": group, "topic": liteParent, "maxMsgNum": "32",
		"invisibleTime": "30000", "pollTime": strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
}

type litePopped struct {
	msgs  []*message.Message
	sizes []int
	ext   map[string]string
}

func decodeLitePop(t *testing.T, resp *remoting.Command) litePopped {
	t.Helper()
	if resp.Code != code.Success {
		t.Fatalf("pop: code %d %q", resp.Code, resp.Remark)
	}
	p := litePopped{ext: resp.ExtFields}
	for b := resp.Body; len(b) > 0; {
		m, n, err := message.DecodeStored(b, message.DecodeOptions{})
		if err != nil {
			t.Fatalf("pop body: %v", err)
		}
		p.msgs, p.sizes = append(p.msgs, m), append(p.sizes, n)
		b = b[n:]
	}
	return p
}

func (c *liteClient) ack(group, lite string, offset int64, p litePopped) *remoting.Command {
	c.t.Helper()
	return c.invoke(code.AckMessage, map[string]string{
		"consumerGroup": group, "topic": liteParent, "queueId": "0", "offset": strconv.FormatInt(offset, 10), "liteTopic": lite,
		"extraInfo": fmt.Sprintf("0 %s %s 999 0 broker-a 0 %d", p.ext["popTime"], p.ext["invisibleTime"], offset),
	}, nil)
}

// TestLiteTopicSeedFlow is issue 6's flow with real processes: a LITE parent
// with a short expiration, a lite group bound to it, a subscribed client,
// one message for lite topic user_10086 (one CommitLog record, one LMQ
// entry) popped by a long poll the event wakes, acked; idle past the
// expiration the sweeper deletes offsets, subscription and keys (checked
// again after a restart); a new message re-creates the lite topic from
// offset 0. Then the mqadmin lite commands, a dead letter and the bad
// inputs.
func TestLiteTopicSeedFlow(t *testing.T) {
	c := startCluster(t, framework.Options{Brokers: 1, LiteExpirationUnit: liteExpirationUnit, BrokerConf: map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true",
		"minLiteTTl": "1000", "liteTtlCheckInterval": "500", "liteEventCheckInterval": "500",
		"flushConsumerOffsetInterval": "500",
	}})
	bp := c.Brokers()[0]
	mq := func(args ...string) string { return mqadmin(t, c, args...) }
	mq("updateTopic", "-c", "DefaultCluster", "-t", liteParent, "-r", "4", "-w", "4",
		"-a", fmt.Sprintf("+message.type=LITE,+lite.topic.expiration=%d", liteExpiration))
	mq("updateTopic", "-c", "DefaultCluster", "-t", "PlainTopic", "-r", "1", "-w", "1")
	mq("updateSubGroup", "-c", "DefaultCluster", "-g", liteGroup, "--attributes", "+lite.bind.topic="+liteParent)
	mq("updateSubGroup", "-c", "DefaultCluster", "-g", "quota_cg", "--attributes", "+lite.bind.topic="+liteParent+",+lite.sub.client.quota=2")
	mq("updateSubGroup", "-c", "DefaultCluster", "-g", "plain_cg")

	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	lc := &liteClient{t: t, rc: rc, addr: bp.Addr()}
	adm, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	commitLogMax := func() int64 {
		t.Helper()
		info, err := adm.GetBrokerRuntimeInfo(ctx, bp.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(info["commitLogMaxOffset"], 10, 64)
		return n
	}

	lc.want("subscribe", lc.subscribe("client-1", liteGroup, []string{liteName}), code.Success, "")
	// A long-polling pop, parked before the message exists.
	answered := remotingtest.InvokeAsync(t, rc, bp.Addr(),
		remoting.NewRequest(code.PopLiteMessage, litePopExt("client-1", liteGroup, 15*time.Second), nil), 20*time.Second)
	testutil.Eventually(t, 5*time.Second, func() error {
		ci, err := adm.GetLiteClientInfo(ctx, bp.Addr(), liteParent, liteGroup, "client-1", 0)
		if err != nil {
			return err
		}
		if ci.LastAccessTime == 0 {
			return fmt.Errorf("pop not parked yet")
		}
		return nil
	})
	before := commitLogMax()
	sent := time.Now()
	lc.want("send", lc.send(liteParent, 2, "hello lite", liteName), code.Success, "")
	var resp *remoting.Command
	select {
	case resp = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("long poll not answered after the send")
	}
	if d := time.Since(sent); d > 3*time.Second {
		t.Fatalf("long poll answered %v after the send: not woken by the event", d)
	}
	p := decodeLitePop(t, resp)
	if len(p.msgs) != 1 || string(p.msgs[0].Body) != "hello lite" || p.ext["reviveQid"] != "999" || p.ext["orderCountInfo"] != "0" {
		t.Fatalf("popped %d messages, ext %v", len(p.msgs), p.ext)
	}
	m := p.msgs[0]
	if m.Topic != liteParent || m.Properties[message.PropertyInnerMultiDispatch] != liteLMQ ||
		m.Properties[message.PropertyInnerMultiQueueOffset] != "0" || m.Properties[message.PropertyLiteTopic] != liteName {
		t.Fatalf("stored message %s %v", m.Topic, m.Properties)
	}
	// One CommitLog record (exactly the popped record's bytes), one LMQ entry.
	if grown := commitLogMax() - before; grown != int64(p.sizes[0]) {
		t.Fatalf("CommitLog grew by %d bytes, the record is %d", grown, p.sizes[0])
	}
	ti, err := adm.GetLiteTopicInfo(ctx, bp.Addr(), liteParent, liteName)
	if err != nil || ti.TopicOffset.MinOffset != 0 || ti.TopicOffset.MaxOffset != 1 || len(ti.Subscriber) != 1 {
		t.Fatalf("lite topic info %+v %v", ti, err)
	}
	if max, err := adm.GetMaxOffsetOf(ctx, bp.Addr(), liteParent, 2); err != nil || max != 1 {
		t.Fatalf("parent queue max %d %v", max, err)
	}

	lc.want("ack", lc.ack(liteGroup, liteName, 0, p), code.Success, "")
	gi, err := adm.GetLiteGroupInfo(ctx, bp.Addr(), liteGroup, liteName, 20)
	if err != nil || gi.LiteTopicOffsetWrapper == nil || gi.LiteTopicOffsetWrapper.ConsumerOffset != 1 || gi.TotalLagCount != 0 {
		t.Fatalf("after ack: %+v %v", gi, err)
	}

	// The mqadmin lite commands against the live broker.
	out := mq("getBrokerLiteInfo", "-c", "DefaultCluster", "-d")
	if !strings.Contains(out, bp.Addr()) || !strings.Contains(out, `"OrderTopic":3`) || !strings.Contains(out, `"OrderTopic":["lite_cg"`) {
		t.Fatalf("getBrokerLiteInfo:\n%s", out)
	}
	if out := mq("getParentTopicInfo", "-p", liteParent); !strings.Contains(out, "broker-a") || !strings.Contains(out, "[lite_cg") {
		t.Fatalf("getParentTopicInfo:\n%s", out)
	}
	if out := mq("getLiteTopicInfo", "-p", liteParent, "-l", liteName, "-s"); !strings.Contains(out, "[client-1@lite_cg]") || !strings.Contains(out, liteLMQ) {
		t.Fatalf("getLiteTopicInfo:\n%s", out)
	}
	if out := mq("getLiteClientInfo", "-p", liteParent, "-g", liteGroup, "-c", "client-1", "-s"); !strings.Contains(out, "Lite Topics: [user_10086]") {
		t.Fatalf("getLiteClientInfo:\n%s", out)
	}
	if out := mq("getLiteGroupInfo", "-p", liteParent, "-g", liteGroup, "-l", liteName); !strings.Contains(out, "Total Lag Count: 0") {
		t.Fatalf("getLiteGroupInfo:\n%s", out)
	}
	if out := mq("triggerLiteDispatch", "-p", liteParent, "-g", liteGroup); !strings.Contains(out, "dispatched") {
		t.Fatalf("triggerLiteDispatch:\n%s", out)
	}
	if out := mq("listLiteTopics", "-p", liteParent); !strings.Contains(out, liteName) || !strings.Contains(out, "lite_cg(1/0)") {
		t.Fatalf("listLiteTopics:\n%s", out)
	}

	// Dead letter (docs/lite-topics.md §6.10): a message the consumer gives up on is sent back
	// with delayLevel -1; it lands in %DLQ%lite_cg (keeping __LITE_TOPIC, not
	// dispatched to an LMQ) and is acked on its lite topic.
	lc.want("send doomed", lc.send(liteParent, 0, "doomed", liteName), code.Success, "")
	var pd litePopped
	testutil.Eventually(t, 5*time.Second, func() error {
		resp := lc.invoke(code.PopLiteMessage, litePopExt("client-1", liteGroup, 0), nil)
		if resp.Code != code.Success {
			return fmt.Errorf("pop: code %d %q", resp.Code, resp.Remark)
		}
		pd = decodeLitePop(t, resp)
		return nil
	})
	if len(pd.msgs) != 1 || string(pd.msgs[0].Body) != "doomed" {
		t.Fatalf("popped %d messages", len(pd.msgs))
	}
	lc.want("send back to the DLQ", lc.invoke(code.ConsumerSendMsgBack, map[string]string{
		"offset": strconv.FormatInt(pd.msgs[0].CommitLogOffset, 10), "group": liteGroup, "delayLevel": "-1",
		"originTopic": liteParent, "originMsgId": pd.msgs[0].UniqKey(), "maxReconsumeTimes": "16",
	}, nil), code.Success, "")
	testutil.Eventually(t, 5*time.Second, func() error {
		if max, err := adm.GetMaxOffsetOf(ctx, bp.Addr(), "%DLQ%"+liteGroup, 0); err != nil || max != 1 {
			return fmt.Errorf("DLQ max offset %d %v", max, err)
		}
		return nil
	})
	if gi, err := adm.GetLiteGroupInfo(ctx, bp.Addr(), liteGroup, liteName, 20); err != nil || gi.LiteTopicOffsetWrapper == nil ||
		gi.LiteTopicOffsetWrapper.ConsumerOffset != 2 || gi.TotalLagCount != 0 {
		t.Fatalf("after the dead letter: %+v %v", gi, err)
	}

	// Bad input: nothing stored, clear codes.
	for _, bad := range []string{"a$b", "a,b", "x.y", strings.Repeat("z", 65)} {
		lc.want("illegal lite name "+bad, lc.send(liteParent, 0, "x", bad), code.MessageIllegal, "lite topic")
	}
	lc.want("lite on plain topic", lc.send("PlainTopic", 0, "x", "ok"), code.MessageIllegal, "not a LITE topic")
	lc.want("over quota", lc.subscribe("client-2", "quota_cg", []string{"a", "b", "c"}), code.LiteSubscriptionQuotaExceeded, "quota")
	lc.want("pop unbound group", lc.invoke(code.PopLiteMessage, litePopExt("client-1", "plain_cg", 0), nil), code.InvalidParameter, "not bound")
	if bi, err := adm.GetBrokerLiteInfo(ctx, bp.Addr()); err != nil || bi.CurrentLmqNum != 1 {
		t.Fatalf("bad input created LMQs: %+v %v", bi, err)
	}

	// Idle past the expiration: the sweeper deletes the lite topic.
	testutil.Eventually(t, 15*time.Second, func() error {
		ti, err := adm.GetLiteTopicInfo(ctx, bp.Addr(), liteParent, liteName)
		if err != nil {
			return err
		}
		if ti.TopicOffset.MaxOffset != 0 {
			return fmt.Errorf("lite topic still has max offset %d", ti.TopicOffset.MaxOffset)
		}
		return nil
	})
	gone := func() error {
		gi, err := adm.GetLiteGroupInfo(ctx, bp.Addr(), liteGroup, liteName, 20)
		if err != nil || gi.TotalLagCount != -1 || gi.LiteTopicOffsetWrapper != nil {
			return fmt.Errorf("group offset survived: %+v %v", gi, err)
		}
		bi, err := adm.GetBrokerLiteInfo(ctx, bp.Addr())
		if err != nil || bi.CurrentLmqNum != 0 {
			return fmt.Errorf("broker lite info %+v %v", bi, err)
		}
		pi, err := adm.GetParentTopicInfo(ctx, bp.Addr(), liteParent)
		if err != nil || pi.LiteTopicCount != 0 {
			return fmt.Errorf("parent info %+v %v", pi, err)
		}
		return nil
	}
	checkGone := func(when string) {
		t.Helper()
		if err := gone(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	// The queue goes first, then the sweep's cascade (index, offsets,
	// subscriptions).
	testutil.Eventually(t, 5*time.Second, func() error {
		if err := gone(); err != nil {
			return err
		}
		if ci, err := adm.GetLiteClientInfo(ctx, bp.Addr(), liteParent, liteGroup, "client-1", 0); err != nil || ci.LiteTopicCount != 0 {
			return fmt.Errorf("subscription survived: %+v %v", ci, err)
		}
		return nil
	})
	// The keys are gone from Pebble too: a restart (which rebuilds the
	// queue table from them) does not bring the lite topic back.
	time.Sleep(time.Second) // one offset flush
	if err := bp.Stop(); err != nil {
		t.Fatalf("stop broker: %v", err)
	}
	bp.Start(t)
	testutil.Eventually(t, 10*time.Second, func() error {
		_, err := adm.GetBrokerLiteInfo(ctx, bp.Addr())
		return err
	})
	checkGone("after restart")

	// A new message re-creates the lite topic from offset 0.
	lc.want("resubscribe", lc.subscribe("client-1", liteGroup, []string{liteName}), code.Success, "")
	lc.want("send again", lc.send(liteParent, 1, "again", liteName), code.Success, "")
	var p2 litePopped
	testutil.Eventually(t, 10*time.Second, func() error {
		resp := lc.invoke(code.PopLiteMessage, litePopExt("client-1", liteGroup, 2*time.Second), nil)
		if resp.Code != code.Success {
			return fmt.Errorf("pop: code %d %q", resp.Code, resp.Remark)
		}
		p2 = decodeLitePop(t, resp)
		return nil
	})
	if len(p2.msgs) != 1 || string(p2.msgs[0].Body) != "again" || p2.msgs[0].Properties[message.PropertyInnerMultiQueueOffset] != "0" {
		t.Fatalf("re-created lite topic popped %+v", p2.msgs)
	}
	lc.want("ack again", lc.ack(liteGroup, liteName, 0, p2), code.Success, "")
	var page *protocol.ListLiteTopicsResponseBody
	if page, err = adm.ListLiteTopics(ctx, bp.Addr(), liteParent, liteGroup, "", 10); err != nil || page.Total != 1 || page.LiteTopics[0].Groups[0].ConsumerOffset != 1 {
		t.Fatalf("listing after re-creation %+v %v", page, err)
	}
}
