package e2e

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestTimerProgressCodes: after delay-level and timer messages, the three
// codes an Apache slave copies answer through pkg/admin with what is true
// of the broker — GET_ALL_DELAY_OFFSET: level 1's three messages delivered
// (offset 3), level 3's one still waiting (offset 0); GET_TIMER_CHECK_POINT:
// the three timer messages indexed (queue offsets 3), its read time at
// most now and not past the two waiting timers; GET_TIMER_METRICS: two
// timer messages of the topic waiting. After a kill -9 and a start, the
// timing count (and rocketmq_timing_messages) and the delay offsets are
// the same.
func TestTimerProgressCodes(t *testing.T) {
	t.Parallel()
	promPort := harness.LatePort(t)
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1, BrokerConf: map[string]string{
		"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1", "metricsPromExporterPort": strconv.Itoa(promPort),
	}})
	b := c.Brokers()[0]
	const topic = "TimerProgressTopic"
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "1", "-w", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}},
		Group: "timer_progress_pg"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	send := func(body string, set func(*message.Message)) {
		t.Helper()
		m := &message.Message{Topic: topic, Body: []byte(body)}
		set(m)
		testutil.Eventually(t, 20*time.Second, func() error {
			r, err := p.SendSync(ctx, m)
			if err == nil && r.Status != client.SendOK {
				err = fmt.Errorf("status %v", r.Status)
			}
			return err
		})
	}
	for i := range 3 {
		send(fmt.Sprintf("level1-%d", i), func(m *message.Message) { m.SetDelayTimeLevel(1) })
	}
	send("level3", func(m *message.Message) { m.SetDelayTimeLevel(3) })
	later := time.Now().Add(time.Hour)
	send("timer-later-0", func(m *message.Message) { m.SetDeliverTime(later) })
	send("timer-later-1", func(m *message.Message) { m.SetDeliverTime(later) })
	send("timer-soon", func(m *message.Message) { m.SetDelayTime(500 * time.Millisecond) })

	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	wantDelay := map[int32]int64{1: 3, 3: 0}
	check := func(when string) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() error {
			d, err := ac.GetAllDelayOffset(ctx, b.Addr())
			if err != nil {
				return err
			}
			if !maps.Equal(d.OffsetTable, wantDelay) {
				return fmt.Errorf("%s: delay offsets %v, want %v", when, d.OffsetTable, wantDelay)
			}
			m, err := ac.GetTimerMetrics(ctx, b.Addr())
			if err != nil {
				return err
			}
			if got := m.TimingCount[topic]; got.Count != 2 || got.TimeStamp <= 0 {
				return fmt.Errorf("%s: timer metrics %+v, want 2 of %s waiting", when, m.TimingCount, topic)
			}
			before := time.Now().UnixMilli()
			cp, err := ac.GetTimerCheckPoint(ctx, b.Addr())
			if err != nil {
				return err
			}
			if cp.MasterTimerQueueOffset != 3 || cp.LastTimerQueueOffset != 3 || cp.LastTimerLogFlushPos != 0 ||
				cp.LastReadTimeMs > time.Now().UnixMilli() || cp.LastReadTimeMs < before-60_000 || cp.DataVersion.Counter < 1 {
				return fmt.Errorf("%s: timer checkpoint %+v", when, cp)
			}
			fams, _, err := scrapeMetrics("127.0.0.1:" + strconv.Itoa(promPort))
			if err != nil {
				return err
			}
			s := fams["rocketmq_timing_messages"].Find(map[string]string{"topic": topic})
			if len(s) != 1 || s[0].Value != 2 {
				return fmt.Errorf("%s: rocketmq_timing_messages of %s: %v, want 2", when, topic, s)
			}
			return nil
		})
	}
	check("before the crash")
	b.Kill(t)
	b.Start(t)
	check("after kill -9")
	var d protocol.DelayOffsets
	if d, err = ac.GetAllDelayOffset(ctx, b.Addr()); err != nil || d.DataVersion.Timestamp <= 0 {
		t.Fatalf("delay offsets %+v %v: want a data version", d, err)
	}
}
