// Package chaos is the failure harness of the end-to-end tests, after
// openchaos: a producer sends messages with unique ids and records every
// id the broker acknowledged with SEND_OK; a checker consumes everything
// (one clustering group) and records every id received; the report counts
// enqueued / acked / dequeued / lost / duplicated. Lost is what a broker
// promised and did not deliver: acked ids never consumed.
//
// Both sides are real client-go clients, as users run them. Only SEND_OK
// counts as acked (FLUSH_SLAVE_TIMEOUT and friends store the message but do
// not promise it, and client-go does not retry them).
package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// Report is the outcome of a run.
type Report struct {
	Enqueued   int            // send attempts
	Acked      int            // SEND_OK answers
	Failed     map[string]int // other outcomes, by kind
	Dequeued   int            // distinct ids consumed
	Deliveries int            // every delivery, duplicates included
	Lost       int            // acked, never consumed
	Duplicated int            // ids consumed more than once
	LostIDs    []string       // up to 20
	Unknown    int            // consumed ids the producer never sent
}

func (r Report) String() string {
	var kinds []string
	for k, n := range r.Failed {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	slices.Sort(kinds)
	return fmt.Sprintf("enqueued=%d acked=%d dequeued=%d deliveries=%d lost=%d duplicated=%d unknown=%d failed=[%s] lostIDs=%v",
		r.Enqueued, r.Acked, r.Dequeued, r.Deliveries, r.Lost, r.Duplicated, r.Unknown, strings.Join(kinds, " "), r.LostIDs)
}

// Options configure a run.
type Options struct {
	Namesrv  []string
	Topic    string
	Group    string        // consumer group; the producer group is Group + "_p"
	Run      string        // id prefix, unique per run
	Interval time.Duration // between sends (per producer goroutine)
	Senders  int           // concurrent senders (default 1)
	// SendTimeout bounds one send; Retries is client-go's retry count
	// (it retries other brokers on errors, never on a stored-but-not-OK
	// status).
	SendTimeout time.Duration
	Retries     int
}

// Run is one producer/checker pair.
type Run struct {
	o Options

	mu         sync.Mutex
	enqueued   int
	acked      map[string]struct{}
	acks       []Ack
	fails      []time.Time
	failed     map[string]int
	received   map[string]int
	deliveries int
	unknown    int

	p      rocketmq.Producer
	c      rocketmq.PushConsumer
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// Start starts the checker's consumer, then the producer.
func Start(o Options) (*Run, error) {
	if o.Senders <= 0 {
		o.Senders = 1
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 3 * time.Second
	}
	r := &Run{o: o, acked: map[string]struct{}{}, failed: map[string]int{}, received: map[string]int{}, stop: make(chan struct{})}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer(o.Namesrv), consumer.WithGroupName(o.Group),
		consumer.WithInstance(o.Run+"-checker"), consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return nil, fmt.Errorf("chaos: checker: %w", err)
	}
	if err := c.Subscribe(o.Topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, r.consume); err != nil {
		return nil, fmt.Errorf("chaos: subscribe: %w", err)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start checker: %w", err)
	}
	r.c = c
	p, err := rocketmq.NewProducer(producer.WithNameServer(o.Namesrv), producer.WithGroupName(o.Group+"_p"),
		producer.WithInstanceName(o.Run+"-producer"), producer.WithRetry(o.Retries), producer.WithSendMsgTimeout(o.SendTimeout))
	if err != nil {
		_ = c.Shutdown()
		return nil, fmt.Errorf("chaos: producer: %w", err)
	}
	if err := p.Start(); err != nil {
		_ = c.Shutdown()
		return nil, fmt.Errorf("chaos: start producer: %w", err)
	}
	r.p = p
	for s := 0; s < o.Senders; s++ {
		r.wg.Add(1)
		go r.send(s)
	}
	return r, nil
}

func (r *Run) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.deliveries++
		id := string(m.Body)
		if !strings.HasPrefix(id, r.o.Run+"-") {
			r.unknown++
			continue
		}
		r.received[id]++
	}
	return consumer.ConsumeSuccess, nil
}

func (r *Run) send(sender int) {
	defer r.wg.Done()
	t := time.NewTicker(max(r.o.Interval, time.Millisecond))
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		id := fmt.Sprintf("%s-%d-%d", r.o.Run, sender, n)
		msg := primitive.NewMessage(r.o.Topic, []byte(id))
		msg.WithKeys([]string{id})
		ctx, cancel := context.WithTimeout(context.Background(), r.o.SendTimeout+time.Second)
		res, err := r.p.SendSync(ctx, msg)
		cancel()
		r.mu.Lock()
		r.enqueued++
		switch {
		case err != nil:
			r.failed[errKind(err)]++
			r.fails = append(r.fails, time.Now())
		case res.Status == primitive.SendOK:
			r.acked[id] = struct{}{}
			r.acks = append(r.acks, Ack{ID: id, Store: storeHost(res.OffsetMsgID), At: time.Now()})
		default:
			r.failed[fmt.Sprintf("status%d", res.Status)]++
			r.fails = append(r.fails, time.Now())
		}
		r.mu.Unlock()
	}
}

// Ack is one SEND_OK answer: the message id, the store host the broker
// wrote into the message's offset id ("ip:port", the broker that stored
// it) and when the answer arrived.
type Ack struct {
	ID, Store string
	At        time.Time
}

// storeHost decodes the broker address from an offset message id.
func storeHost(offsetMsgID string) string {
	id, err := primitive.UnmarshalMsgID([]byte(offsetMsgID))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", id.Addr, id.Port)
}

// Acks returns the SEND_OK answers that arrived after since.
func (r *Run) Acks(since time.Time) []Ack {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Ack
	for _, a := range r.acks {
		if a.At.After(since) {
			out = append(out, a)
		}
	}
	return out
}

// Failures counts the sends that ended in an error or a status other than
// SEND_OK after since.
func (r *Run) Failures(since time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, at := range r.fails {
		if at.After(since) {
			n++
		}
	}
	return n
}

// errKind names a send error briefly for the report.
func errKind(err error) string {
	s := err.Error()
	if i := strings.Index(s, "CODE: "); i >= 0 { // a broker's or the client's code: keep it and the start of its text
		s = s[i:]
		if len(s) > 60 {
			s = s[:60]
		}
		return s
	}
	for _, k := range []string{"timeout", "deadline", "refused", "reset", "route", "CODE", "code"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// StopProducing stops the senders and waits for in-flight sends.
func (r *Run) StopProducing() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	r.wg.Wait()
}

// Acked is the number of SEND_OK answers so far.
func (r *Run) Acked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked)
}

// Report counts the run as it stands.
func (r *Run) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Enqueued: r.enqueued, Acked: len(r.acked), Failed: map[string]int{}, Deliveries: r.deliveries, Unknown: r.unknown}
	for k, n := range r.failed {
		rep.Failed[k] = n
	}
	for _, n := range r.received {
		rep.Dequeued++
		if n > 1 {
			rep.Duplicated++
		}
	}
	var lost []string
	for id := range r.acked {
		if r.received[id] == 0 {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	rep.Lost = len(lost)
	rep.LostIDs = lost[:min(len(lost), 20)]
	return rep
}

// Drain stops the producer and waits until every acked id was consumed
// or timeout passed; it returns the final report either way.
func (r *Run) Drain(timeout time.Duration) Report {
	r.StopProducing()
	deadline := time.Now().Add(timeout)
	for {
		rep := r.Report()
		if rep.Lost == 0 || time.Now().After(deadline) {
			return rep
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close shuts the clients down.
func (r *Run) Close() {
	r.StopProducing()
	_ = r.p.Shutdown()
	_ = r.c.Shutdown()
}
