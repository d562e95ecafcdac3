// Command protobench is the Go-client half of make bench-grpc's "gRPC
// against remoting on our broker" (scripts/bench/grpc.sh with
// GO_CLIENTS=1): the same send load as scripts/java5 GrpcBench, through a
// light client, so that the client's own cost bends the protocol
// comparison less than the Java clients' does:
//
//   - -proto grpc: raw SendMessage rpcs (pkg/grpcapi/v2pb, one NORMAL
//     message each, a fresh message id, plaintext) on -conns connections;
//   - -proto remoting: our SDK's producer (pkg/client, SendSync);
//   - -proto grpc-recv: raw ReceiveMessage rpcs of -g on -t (batches of 32,
//     as GrpcBench recv), each received message acked by an AckMessage rpc
//     of its own (as the Java SimpleConsumer's ackAsync), until -count
//     messages are acked or -recv-timeout passes. Its JSON line is
//     GrpcBench recv's: {"ok","mode":"recv","messages","received",
//     "ackErrors","seconds","tps","complete","firstError",
//     "brokerCpuTicks","clientCpuTicks"}.
//
// -c goroutines send -s byte messages one after the other for -warmup (not
// counted) and then -d; every send of the measured window is timed. The
// only stdout line is JSON with GrpcBench's fields: {"ok","mode":"send",
// "messages","sent","errors","seconds","tps","latencyMs":{"p50","p90",
// "p99","p999","max","mean"},"brokerCpuTicks" (with -pid: the broker
// process's utime+stime ticks in the window),"clientCpuTicks"}.
//
//	go run ./tests/cmd/protobench -proto grpc -e 127.0.0.1:8081 -t BenchTopic
//	go run ./tests/cmd/protobench -proto remoting -n 127.0.0.1:9876 -t BenchTopic
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
)

type options struct {
	proto, endpoint, namesrv, topic, group string
	goroutines, conns, size, pid           int
	count                                  int64
	duration, warmup, recvTimeout          time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.proto, "proto", "grpc", "grpc or remoting")
	flag.StringVar(&o.endpoint, "e", "127.0.0.1:8081", "gRPC endpoint (-proto grpc)")
	flag.StringVar(&o.namesrv, "n", "127.0.0.1:9876", "nameserver (-proto remoting)")
	flag.StringVar(&o.topic, "t", "BenchTopic", "topic")
	flag.StringVar(&o.group, "g", "bench_grpc_cg", "consumer group (-proto grpc-recv)")
	flag.Int64Var(&o.count, "count", 0, "messages to receive and ack (-proto grpc-recv)")
	flag.DurationVar(&o.recvTimeout, "recv-timeout", 45*time.Second, "longest receive run (-proto grpc-recv)")
	flag.IntVar(&o.goroutines, "c", 32, "sending goroutines")
	flag.IntVar(&o.conns, "conns", 1, "gRPC connections shared by the goroutines")
	flag.IntVar(&o.size, "s", 1024, "message body size in bytes")
	flag.IntVar(&o.pid, "pid", 0, "broker process whose CPU ticks are reported (0: none)")
	flag.DurationVar(&o.duration, "d", 15*time.Second, "measured window")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "sends before the window, not counted")
	flag.Parse()
	out, err := run(o)
	if err != nil {
		b, _ := json.Marshal(map[string]any{"ok": false, "error": err.Error()})
		fmt.Println(string(b))
		os.Exit(1)
	}
	fmt.Println(out)
}

// sender sends one message of body.
type sender func(ctx context.Context, body []byte) error

func run(o options) (string, error) {
	if o.proto == "grpc-recv" {
		return recv(o)
	}
	ctx := context.Background()
	var send sender
	var closeFn func()
	switch o.proto {
	case "grpc":
		s, c, err := grpcSender(o)
		if err != nil {
			return "", err
		}
		send, closeFn = s, c
	case "remoting":
		p, err := client.NewProducer(client.ProducerConfig{
			CommonConfig: client.CommonConfig{NameServers: []string{o.namesrv}},
			Group:        "bench_remoting_go_pg",
		})
		if err != nil {
			return "", fmt.Errorf("remoting producer: %w", err)
		}
		if err := p.Start(); err != nil {
			return "", fmt.Errorf("remoting producer start: %w", err)
		}
		send = func(ctx context.Context, body []byte) error {
			_, err := p.SendSync(ctx, &message.Message{Topic: o.topic, Body: body})
			return err
		}
		closeFn = func() { p.Shutdown(context.Background()) }
	default:
		return "", fmt.Errorf("-proto %q: want grpc, remoting or grpc-recv", o.proto)
	}
	defer closeFn()

	body := make([]byte, o.size)
	_, _ = rand.Read(body)
	start := time.Now()
	from, end := start.Add(o.warmup), start.Add(o.warmup+o.duration)
	var sent, errs atomic.Int64
	lats := make([][]time.Duration, o.goroutines)
	var wg sync.WaitGroup
	for i := range o.goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := time.Now()
				if !t.Before(end) {
					return
				}
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := send(sctx, body)
				cancel()
				if err != nil {
					errs.Add(1)
					continue
				}
				sent.Add(1)
				if !t.Before(from) {
					lats[i] = append(lats[i], time.Since(t))
				}
			}
		}()
	}
	time.Sleep(time.Until(from))
	b0, c0, err := bothTicks(o.pid)
	if err != nil {
		return "", err
	}
	wg.Wait()
	b1, c1, err := bothTicks(o.pid)
	if err != nil {
		return "", err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return "", fmt.Errorf("no send of the measured window succeeded (%d errors)", errs.Load())
	}
	slices.Sort(all)
	pct := func(q float64) string {
		if len(all) == 0 {
			return "0"
		}
		i := int(q*float64(len(all))+0.999999) - 1
		i = max(0, min(len(all)-1, i))
		return ms(all[i])
	}
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	mean := "0"
	if len(all) > 0 {
		mean = ms(sum / time.Duration(len(all)))
	}
	secs := int(o.duration / time.Second)
	r := fmt.Sprintf(`{"ok":true,"mode":"send","client":"go-%s","messages":%d,"sent":%d,"errors":%d,"seconds":%d,"tps":%.1f,`+
		`"latencyMs":{"p50":%s,"p90":%s,"p99":%s,"p999":%s,"max":%s,"mean":%s}`,
		o.proto, len(all), sent.Load(), errs.Load(), secs, float64(len(all))/o.duration.Seconds(),
		pct(0.50), pct(0.90), pct(0.99), pct(0.999), pct(1), mean)
	if o.pid != 0 {
		r += fmt.Sprintf(`,"brokerCpuTicks":%d`, b1-b0)
	}
	return r + fmt.Sprintf(`,"clientCpuTicks":%d}`, c1-c0), nil
}

// grpcConns dials o.conns plaintext connections; the metadata is what the
// 5.x clients send.
func grpcConns(o options) ([]v2pb.MessagingServiceClient, metadata.MD, func(), error) {
	conns := make([]*grpc.ClientConn, 0, o.conns)
	clis := make([]v2pb.MessagingServiceClient, 0, o.conns)
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range max(1, o.conns) {
		c, err := grpc.NewClient(o.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeAll()
			return nil, nil, nil, fmt.Errorf("grpc connect %s: %w", o.endpoint, err)
		}
		conns = append(conns, c)
		clis = append(clis, v2pb.NewMessagingServiceClient(c))
	}
	md := metadata.Pairs("x-mq-client-id", "protobench@"+strconv.Itoa(os.Getpid()), "x-mq-language", "GOLANG", "x-mq-client-version", "5.2.0")
	return clis, md, closeAll, nil
}

// recvBatch is the receive batch size, GrpcBench recv's.
const recvBatch = 32

// recv receives and acks until o.count messages are acked (-proto
// grpc-recv).
func recv(o options) (string, error) {
	if o.count <= 0 {
		return "", errors.New("-proto grpc-recv needs -count")
	}
	clis, md, closeAll, err := grpcConns(o)
	if err != nil {
		return "", err
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), o.recvTimeout)
	defer cancel()
	topic, group := &v2pb.Resource{Name: o.topic}, &v2pb.Resource{Name: o.group}
	var acked, received, ackErrs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) { firstErr.CompareAndSwap(nil, err.Error()) }
	var doneAt atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	b0, c0, err := bothTicks(o.pid)
	if err != nil {
		return "", err
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range o.goroutines {
		cli := clis[i%len(clis)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				got, err := receiveOnce(ctx, cli, topic, group)
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					continue
				}
				received.Add(int64(len(got)))
				var awg sync.WaitGroup
				for _, m := range got {
					awg.Add(1)
					go func() {
						defer awg.Done()
						resp, err := cli.AckMessage(ctx, &v2pb.AckMessageRequest{Group: group, Topic: topic, Entries: []*v2pb.AckMessageEntry{{
							MessageId: m.GetSystemProperties().GetMessageId(), ReceiptHandle: m.GetSystemProperties().GetReceiptHandle(),
						}}})
						if err == nil && resp.GetStatus().GetCode() != v2pb.Code_OK {
							err = errors.New("ack: " + resp.GetStatus().String())
						}
						if err != nil {
							ackErrs.Add(1)
							fail(err)
							return
						}
						if acked.Add(1) == o.count {
							doneAt.Store(time.Now().UnixNano())
							once.Do(func() { close(done) })
						}
					}()
				}
				awg.Wait()
			}
		}()
	}
	complete := true
	select {
	case <-done:
	case <-ctx.Done():
		complete = false
	}
	stop := time.Now()
	if complete {
		stop = time.Unix(0, doneAt.Load())
	}
	b1, c1, err := bothTicks(o.pid)
	if err != nil {
		return "", err
	}
	cancel()
	wg.Wait()
	n := min(acked.Load(), o.count)
	secs := stop.Sub(start).Seconds()
	first, _ := firstErr.Load().(string)
	fe, _ := json.Marshal(first)
	r := fmt.Sprintf(`{"ok":true,"mode":"recv","client":"go-grpc","messages":%d,"received":%d,"ackErrors":%d,"seconds":%.2f,"tps":%.1f,"complete":%t,"firstError":%s`,
		n, received.Load(), ackErrs.Load(), secs, float64(n)/secs, complete, fe)
	if o.pid != 0 {
		r += fmt.Sprintf(`,"brokerCpuTicks":%d`, b1-b0)
	}
	return r + fmt.Sprintf(`,"clientCpuTicks":%d}`, c1-c0), nil
}

// receiveOnce is one ReceiveMessage rpc: the messages it carried (none
// when it ends MESSAGE_NOT_FOUND).
func receiveOnce(ctx context.Context, cli v2pb.MessagingServiceClient, topic, group *v2pb.Resource) ([]*v2pb.Message, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := cli.ReceiveMessage(rctx, &v2pb.ReceiveMessageRequest{
		Group: group, MessageQueue: &v2pb.MessageQueue{Topic: topic, Id: -1},
		FilterExpression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		BatchSize:        recvBatch, InvisibleDuration: durationpb.New(30 * time.Second),
		LongPollingTimeout: durationpb.New(5 * time.Second),
	})
	if err != nil {
		return nil, err
	}
	var got []*v2pb.Message
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if st := r.GetStatus(); st != nil && st.GetCode() != v2pb.Code_OK && st.GetCode() != v2pb.Code_MESSAGE_NOT_FOUND {
			return got, errors.New("receive: " + st.String())
		}
		if m := r.GetMessage(); m != nil {
			got = append(got, m)
		}
	}
}

// grpcSender sends raw SendMessage rpcs round robin over o.conns
// connections, with the metadata the 5.x clients send.
func grpcSender(o options) (sender, func(), error) {
	clis, md, closeAll, err := grpcConns(o)
	if err != nil {
		return nil, nil, err
	}
	var next, seq atomic.Uint64
	var prefix [8]byte
	_, _ = rand.Read(prefix[:])
	idPrefix := strings.ToUpper(hex.EncodeToString(prefix[:]))
	topic := &v2pb.Resource{Name: o.topic}
	send := func(ctx context.Context, body []byte) error {
		cli := clis[next.Add(1)%uint64(len(clis))]
		id := fmt.Sprintf("%s%016X", idPrefix, seq.Add(1))
		resp, err := cli.SendMessage(metadata.NewOutgoingContext(ctx, md), &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
			Topic: topic,
			SystemProperties: &v2pb.SystemProperties{
				MessageId: id, MessageType: v2pb.MessageType_NORMAL, BornTimestamp: timestamppb.Now(),
			},
			Body: body,
		}}})
		if err != nil {
			return err
		}
		if c := resp.GetStatus().GetCode(); c != v2pb.Code_OK {
			return errors.New(c.String() + ": " + resp.GetStatus().GetMessage())
		}
		return nil
	}
	return send, closeAll, nil
}

// bothTicks is ticks of pid and of this process.
func bothTicks(pid int) (int64, int64, error) {
	b, err := ticks(pid)
	if err != nil {
		return 0, 0, err
	}
	c, err := ticks(-1)
	return b, c, err
}

// ticks is the user + system clock ticks of process pid so far
// (/proc/<pid>/stat fields 14 and 15); pid -1 is this process, 0 none.
func ticks(pid int) (int64, error) {
	if pid == 0 {
		return 0, nil
	}
	path := "/proc/self/stat"
	if pid > 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cpu ticks: %w", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // from field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu ticks: short %s", path)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cpu ticks of %s: %w", path, err)
	}
	return u + st, nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
