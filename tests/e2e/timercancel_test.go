package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestTimerCancelAcrossKill9: rocketmq-client-go sends TIMER_DELIVER_MS
// timers, then cancels half of them with Java 5's cancellation markers (a
// timer to the same topic, same delivery time, TIMER_DEL_UNIQKEY =
// "<topic>+<uniqKey>"); the broker is killed with SIGKILL while they are
// pending. After the restart exactly the other half is delivered, once and
// not early, and no marker ever reaches the topic. A marker for a time
// already past is MESSAGE_ILLEGAL.
func TestTimerCancelAcrossKill9(t *testing.T) {
	skipShort(t, "real processes and timers")
	// Mostly waiting for timers: runs beside the other slow tests.
	t.Parallel()
	rlog.SetLogLevel("error") // client-go logs through a process-wide logger
	const topic, n = "TimerCancelE2E", 20
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1})
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "2", "-w", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("timer_cancel_pg"), producer.WithInstanceName("timer-cancel"), producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	send := func(body string, kv ...string) (*primitive.SendResult, error) {
		m := primitive.NewMessage(topic, []byte(body))
		for i := 0; i+1 < len(kv); i += 2 {
			m.WithProperty(kv[i], kv[i+1])
		}
		return p.SendSync(ctx, m)
	}

	start := time.Now()
	due := map[string]int64{}
	var want []string
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("t%02d", i)
		at := start.Add(4*time.Second + time.Duration(i)*50*time.Millisecond).UnixMilli()
		res, err := send(body, message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10))
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		if i%2 == 1 {
			due[body] = at
			want = append(want, body)
			continue
		}
		// The cancellation: Java's TimerMessageStore.buildDeleteKey.
		if _, err := send("cancel-"+body, message.PropertyTimerDeliverMS, strconv.FormatInt(at, 10),
			message.PropertyTimerDelUniqKey, topic+"+"+res.MsgID); err != nil {
			t.Fatalf("cancel %s: %v", body, err)
		}
	}
	_, err = send("cancel-past", message.PropertyTimerDeliverMS, strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10),
		message.PropertyTimerDelUniqKey, topic+"+0A0B0C")
	// client-go flattens broker errors into their text.
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("CODE: %d", code.MessageIllegal)) {
		t.Fatalf("marker for a past time: %v, want MESSAGE_ILLEGAL", err)
	}

	time.Sleep(time.Second)
	b.Kill(t)
	b.Start(t)
	t.Logf("killed and restarted at +%v", time.Since(start).Round(time.Millisecond))

	probe := newProbe(t, c.NamesrvAddr(), "timer_cancel_probe")
	var got []*message.Message
	testutil.Eventually(t, 30*time.Second, func() error {
		var err error
		if got, err = readAll(ctx, probe, topic); err != nil {
			return err
		}
		if len(got) < len(want) {
			return fmt.Errorf("%d of %d timers delivered", len(got), len(want))
		}
		return nil
	})
	// Past the last due time and its slot: anything cancelled would be
	// here by now.
	if d := time.Until(start.Add(4*time.Second + n*50*time.Millisecond + 2*time.Second)); d > 0 {
		time.Sleep(d)
	}
	got, err = readAll(ctx, probe, topic)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range got {
		body := string(m.Body)
		bodies = append(bodies, body)
		if at, ok := due[body]; ok && m.StoreTimestamp < at {
			t.Errorf("%s delivered %d ms early", body, at-m.StoreTimestamp)
		}
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, want) {
		t.Fatalf("delivered %v, want %v", bodies, want)
	}
}
