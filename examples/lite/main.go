// Command lite sends messages to a few lite topics of a LITE parent topic
// and consumes them with a LitePushConsumer, checking that each lite
// topic's messages arrive in send order; it exits 0 once all -count
// messages arrived. It creates the parent topic (message.type=LITE) and
// the lite group (lite.bind.topic) on every master of the cluster first,
// unless -create=false. The brokers need enableLmq=true and
// enableMultiDispatch=true in broker.conf.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/examples/internal/example"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func main() {
	ns, parent := example.TargetFlags(os.Getenv, "LiteTopicExample", "LITE parent topic")
	group := flag.String("g", "example_lite_consumer", "lite consumer group (bound to the parent topic)")
	cluster := flag.String("c", "DefaultCluster", "cluster to create the topic and group in")
	create := flag.Bool("create", true, "create the parent topic and the group first")
	lites := flag.Int("lites", 3, "lite topics (e.g. one per chat session)")
	count := flag.Int("count", 30, "messages to send (round-robin over the lite topics); exit 0 once all arrived")
	flag.Parse()
	log := example.Logger()
	ctx, stop := example.Interruptible()
	defer stop()
	example.Check("lite", run(ctx, *ns, *parent, *group, *cluster, *create, *lites, *count, log))
}

func run(ctx context.Context, ns, parent, group, cluster string, create bool, lites, count int, log *slog.Logger) error {
	if lites < 1 || count < 1 {
		return errors.New("-lites and -count must be positive")
	}
	if create {
		if err := createResources(ctx, ns, cluster, parent, group, log); err != nil {
			return err
		}
	}
	common := client.CommonConfig{NameServers: []string{ns}, Logger: log}

	// Consumer: per lite topic, the next sequence number expected.
	var mu sync.Mutex
	next := map[string]int{}
	got := 0
	done := make(chan struct{})
	c, err := client.NewLitePushConsumer(client.LitePushConsumerConfig{
		CommonConfig: common,
		Group:        group,
		BindTopic:    parent,
		Handler: func(_ context.Context, m *message.Message) client.ConsumeResult {
			lite := m.LiteTopic()
			_, seqText, _ := strings.Cut(string(m.Body), "#")
			seq, _ := strconv.Atoi(seqText)
			mu.Lock()
			defer mu.Unlock()
			if seq < next[lite] {
				return client.ConsumeSuccess // a redelivery of one already seen
			}
			order := "in order"
			if seq != next[lite] {
				order = fmt.Sprintf("OUT OF ORDER (expected #%d)", next[lite])
			}
			fmt.Printf("received %-8s %-12q reconsume=%d %s\n", lite, m.Body, m.ReconsumeTimes, order)
			next[lite] = seq + 1
			if got++; got == count {
				close(done)
			}
			return client.ConsumeSuccess
		},
	})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Shutdown(context.Background())
	names := make([]string, lites)
	for i := range names {
		names[i] = "session-" + strconv.Itoa(i)
		if err := c.SubscribeLite(ctx, names[i]); err != nil {
			return fmt.Errorf("subscribe %s: %w", names[i], err)
		}
	}

	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: common, Group: "example_lite_producer"})
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown(context.Background())
	seq := map[string]int{}
	for i := range count {
		lite := names[i%lites]
		m := &message.Message{Topic: parent, Body: []byte(lite + "#" + strconv.Itoa(seq[lite]))}
		m.SetLiteTopic(lite) // every message of a lite topic goes to its home broker
		seq[lite]++
		res, err := p.SendSync(ctx, m)
		if err != nil {
			return fmt.Errorf("send to %s: %w", lite, err)
		}
		fmt.Printf("sent     %-8s %-12q → %s\n", lite, m.Body, res.Queue)
	}

	select {
	case <-done:
		fmt.Printf("all %d messages of %d lite topics received\n", count, lites)
		return nil
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("received %d of %d messages in a minute", got, count)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// createResources creates the LITE parent topic and the lite group on
// every master of the cluster (mqadmin updateTopic -a +message.type=LITE;
// updateSubGroup --attributes +lite.bind.topic=<parent>).
func createResources(ctx context.Context, ns, cluster, parent, group string, log *slog.Logger) error {
	adm, err := admin.New(admin.Config{NameServers: []string{ns}}, log)
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tc := protocol.NewTopicConfig(parent)
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	masters, err := adm.CreateTopicInCluster(ctx, cluster, tc, "+message.type=LITE")
	if err != nil {
		return fmt.Errorf("create topic %s: %w", parent, err)
	}
	g := admin.NewSubscriptionGroupConfig(group)
	g.Attributes = map[string]string{"+lite.bind.topic": parent}
	for _, addr := range masters {
		if err := adm.CreateSubscriptionGroup(ctx, addr, g); err != nil {
			return fmt.Errorf("create group %s on %s: %w", group, addr, err)
		}
	}
	// Clients learn the new topic's route from the nameserver once the
	// brokers registered it.
	for {
		if rd, err := adm.GetTopicRoute(ctx, parent); err == nil && len(rd.QueueDatas) >= len(masters) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no route yet: %w", parent, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
