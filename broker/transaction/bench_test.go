package transaction

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// BenchmarkSend compares, on the real store (ASYNC_FLUSH), plain sends with
// transactional ones (half message + END_TRANSACTION commit, which stores
// the message again and an op record): run both in one go with
//
//	go test -run '^$' -bench BenchmarkSend -benchtime 20000x ./transaction/
func BenchmarkSend(b *testing.B) {
	st := openRealStore(b, filepath.Join(b.TempDir(), "store"))
	defer st.Close()
	f := newFixture(b, nil, withStore(st), realClock())
	body := make([]byte, 512)
	sendH := f.send.Handlers()[code.SendMessage]
	endH := f.svc.Handlers()[code.EndTransaction]
	var seq atomic.Int64
	ext := func(tx bool) map[string]string {
		props := "KEYS\x01k" + strconv.FormatInt(seq.Add(1), 10) + "\x02"
		sysFlag := "0"
		if tx {
			props += "TRAN_MSG\x01true\x02PGROUP\x01" + testGroup + "\x02"
			sysFlag = strconv.Itoa(int(message.TransactionPreparedType))
		}
		return map[string]string{
			"producerGroup": testGroup, "topic": testTopic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": strconv.FormatInt(seq.Load()%4, 10), "sysFlag": sysFlag,
			"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "properties": props,
		}
	}
	send := func(tx bool) *remoting.Command {
		resp, err := sendH(context.Background(), nil, remoting.NewRequest(code.SendMessage, ext(tx), body))
		if err != nil || resp.Code != code.Success {
			b.Fatalf("send: %v %v", err, resp)
		}
		return resp
	}
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				send(false)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("transaction", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp := send(true)
				_, phy, _ := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
				req := remoting.NewRequest(code.EndTransaction, map[string]string{
					"producerGroup": testGroup, "tranStateTableOffset": resp.ExtFields["queueOffset"],
					"commitLogOffset": strconv.FormatInt(phy, 10), "commitOrRollback": "8",
					"msgId": resp.ExtFields["transactionId"], "transactionId": resp.ExtFields["transactionId"],
				}, nil)
				if r, err := endH(context.Background(), nil, req); err != nil || r.Code != code.Success {
					b.Fatalf("end: %v %v", err, r)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}
