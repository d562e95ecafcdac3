package pop

import (
	"context"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// BenchmarkConsume compares, in one run, the broker-side cost of consuming
// the same backlog by PULL_MESSAGE (offset committed with the next pull)
// and by POP_MESSAGE plus one ACK_MESSAGE per message or one
// BATCH_ACK_MESSAGE per pop. Handlers are called directly (no network);
// the backlog (b.N messages over two queues) is written untimed. Report:
// msgs/s.
//
//	go test ./broker/pop -run XXX -bench Consume -benchtime 20000x
func BenchmarkConsume(b *testing.B) {
	for _, mode := range []string{"pull", "pop+ack", "pop+batchack"} {
		b.Run(mode, func(b *testing.B) {
			r := newRig(b)
			per := b.N/2 + 1
			r.send(testTopic, 0, per, "A")
			r.send(testTopic, 1, per, "A")
			var pp *pull.Processor
			if mode == "pull" {
				var err error
				if pp, err = pull.New(pull.Deps{Config: r.conf, Store: r.st, Topics: r.topics, Subscriptions: r.groups, Consumers: r.cons}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			got := 0
			switch mode {
			case "pull":
				got = benchPull(b, pp, b.N)
			default:
				got = benchPop(b, r, b.N, mode == "pop+batchack")
			}
			b.StopTimer()
			b.ReportMetric(float64(got)/time.Since(start).Seconds(), "msgs/s")
			if got < b.N {
				b.Fatalf("consumed %d of %d", got, b.N)
			}
		})
	}
}

func benchPull(b *testing.B, pp *pull.Processor, n int) int {
	h := pp.Handlers()[code.PullMessage]
	next := [2]int64{}
	got := 0
	for got < n {
		for q := int32(0); q < 2 && got < n; q++ {
			req := remoting.NewRequest(code.PullMessage, map[string]string{
				"consumerGroup": testGroup, "topic": testTopic, "queueId": strconv.Itoa(int(q)),
				"queueOffset": strconv.FormatInt(next[q], 10), "maxMsgNums": "32", "sysFlag": strconv.Itoa(pull.FlagCommitOffset | pull.FlagSubscription),
				"commitOffset": strconv.FormatInt(next[q], 10), "suspendTimeoutMillis": "0", "subVersion": "0", "subscription": "*", "expressionType": "TAG",
			}, nil)
			resp, err := h(context.Background(), nil, req)
			if err != nil || resp == nil {
				b.Fatalf("pull: %v", err)
			}
			if resp.Code != code.Success {
				continue
			}
			msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{AliasBody: true})
			if err != nil {
				b.Fatal(err)
			}
			got += len(msgs)
			next[q], _ = strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
		}
	}
	return got
}

func benchPop(b *testing.B, r *rig, n int, batch bool) int {
	got := 0
	for got < n {
		res := r.pop(-1, 32, 60_000, nil)
		if len(res.msgs) == 0 {
			b.Fatalf("pop found nothing after %d", got)
		}
		got += len(res.msgs)
		if batch {
			byQueue := map[int32][]popped{}
			for _, m := range res.msgs {
				byQueue[m.receipt.QueueID] = append(byQueue[m.receipt.QueueID], m)
			}
			body := `{"acks":[`
			first := true
			for q, ms := range byQueue {
				ei := ms[0].receipt
				var offs []int64
				for _, m := range ms {
					offs = append(offs, m.receipt.QueueOffset)
				}
				if !first {
					body += ","
				}
				first = false
				body += `{"c":"` + testGroup + `","t":"` + testTopic + `","r":"0","so":` + strconv.FormatInt(ei.CkQueueOffset, 10) +
					`,"q":` + strconv.Itoa(int(q)) + `,"rq":` + strconv.Itoa(int(ei.ReviveQid)) + `,"pt":` + strconv.FormatInt(ei.PopTime, 10) +
					`,"it":60000,"b":"` + b64(popcodec.EncodeBitSet(ei.CkQueueOffset, offs)) + `"}`
			}
			body += `]}`
			resp, err := r.p.handleBatchAck(context.Background(), nil, remoting.NewRequest(code.BatchAckMessage, nil, []byte(body)))
			if err != nil || resp.Code != code.Success || resp.Remark != "" {
				b.Fatalf("batch ack: %v %+v", err, resp)
			}
			continue
		}
		for _, m := range res.msgs {
			resp, err := r.p.handleAck(context.Background(), nil, ackReq(testGroup, m))
			if err != nil || resp.Code != code.Success {
				b.Fatalf("ack: %v", err)
			}
		}
	}
	return got
}
