package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
)

func startTx(t *testing.T, c *clienttest.Cluster, group string, checker client.TransactionChecker) *client.TransactionProducer {
	t.Helper()
	tp, err := client.NewTransactionProducer(client.ProducerConfig{CommonConfig: common(c), Group: group, SendTimeout: testSendTimeout}, checker)
	return clienttest.Started(t, tp, err)
}

// endTxFor waits for the END_TRANSACTION naming msgID.
func endTxFor(t *testing.T, b *clienttest.Broker, msgID string, fromCheck bool) clienttest.EndTx {
	t.Helper()
	var found clienttest.EndTx
	testutil.Eventually(t, clusterWait, func() error {
		for _, e := range b.EndTransactions() {
			if e.Ext["msgId"] == msgID && e.Ext["fromTransactionCheck"] == strconv.FormatBool(fromCheck) {
				found = e
				return nil
			}
		}
		return fmt.Errorf("no END_TRANSACTION for %s (fromCheck %v) in %v", msgID, fromCheck, b.EndTransactions())
	})
	return found
}

func TestSendInTransaction(t *testing.T) {
	c := startTopic(t, 2)
	br := c.Brokers[0]
	tp := startTx(t, c, "TXG", func(context.Context, *message.Message) (client.TransactionState, error) {
		return client.TransactionCommit, nil
	})
	tests := []struct {
		name     string
		state    client.TransactionState
		err      error
		wantType string
		remark   bool
	}{
		{"commit", client.TransactionCommit, nil, "8", false},
		{"rollback", client.TransactionRollback, nil, "12", false},
		{"unknown", client.TransactionUnknown, nil, "0", false},
		{"error means unknown", client.TransactionCommit, errors.New("db down"), "0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg("T", "body-"+tt.name)
			m.SetDelayTimeLevel(3) // transactions drop delays
			var seen *message.Message
			res, err := tp.SendInTransaction(context.Background(), m, func(_ context.Context, lm *message.Message) (client.TransactionState, error) {
				seen = lm
				return tt.state, tt.err
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen == nil || client.TransactionIDOf(seen) != res.MsgID || res.TransactionID != "" && res.TransactionID != res.MsgID {
				t.Fatalf("local saw %v, result %+v", seen, res.SendResult)
			}
			if !errors.Is(res.LocalErr, tt.err) {
				t.Fatalf("LocalErr = %v", res.LocalErr)
			}
			// The half message carries the transaction flags, no delay.
			sends := br.Sends()
			last := sends[len(sends)-1]
			props := message.DecodeProperties([]byte(last.Ext["i"]))
			if last.Ext["f"] != strconv.Itoa(int(message.TransactionPreparedType)) || props[message.PropertyTransactionPrepared] != "true" ||
				props[message.PropertyProducerGroup] != "TXG" || props[message.PropertyDelayTimeLevel] != "" {
				t.Fatalf("half message header %v, properties %v", last.Ext, props)
			}
			e := endTxFor(t, br, res.MsgID, false)
			stored, _ := br.Messages("T", res.Queue.QueueID)
			half := stored[res.QueueOffset]
			if e.Ext["commitOrRollback"] != tt.wantType || e.Ext["producerGroup"] != "TXG" || !e.Oneway ||
				e.Ext["tranStateTableOffset"] != strconv.FormatInt(res.QueueOffset, 10) ||
				e.Ext["commitLogOffset"] != strconv.FormatInt(half.CommitLogOffset, 10) || e.Ext["bname"] != "broker-a" || e.Ext["topic"] != "T" {
				t.Fatalf("END_TRANSACTION %+v (half at %d/%d)", e, res.QueueOffset, half.CommitLogOffset)
			}
			if (e.Remark != "") != tt.remark {
				t.Fatalf("remark %q", e.Remark)
			}
		})
	}
	if _, err := tp.SendInTransaction(context.Background(), msg("T", "x"), nil); err == nil {
		t.Fatal("nil local transaction accepted")
	}
	if _, err := client.NewTransactionProducer(client.ProducerConfig{CommonConfig: common(c)}, nil); err == nil {
		t.Fatal("nil checker accepted")
	}
}

// The broker's CHECK_TRANSACTION_STATE is answered by the checker with an
// END_TRANSACTION marked fromTransactionCheck; checks of another group's
// messages are ignored.
func TestTransactionCheck(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	var mu sync.Mutex
	checked := map[string]int{}
	tp := startTx(t, c, "TXG", func(_ context.Context, m *message.Message) (client.TransactionState, error) {
		mu.Lock()
		defer mu.Unlock()
		checked[string(m.Body)]++
		switch string(m.Body) {
		case "rollback":
			return client.TransactionRollback, nil
		case "broken":
			return client.TransactionCommit, errors.New("cannot tell")
		case "panics":
			panic("checker bug")
		}
		return client.TransactionCommit, nil
	})
	states := map[string]string{"commit": "8", "rollback": "12", "broken": "0", "panics": "0"}
	for body, want := range states {
		res, err := tp.SendInTransaction(context.Background(), msg("T", body), func(context.Context, *message.Message) (client.TransactionState, error) {
			return client.TransactionUnknown, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		stored, _ := br.Messages("T", 0)
		half := stored[res.QueueOffset]
		checkTx(t, br, "TXG", half)
		e := endTxFor(t, br, res.MsgID, true)
		if e.Ext["commitOrRollback"] != want || e.Ext["transactionId"] != res.MsgID || e.Ext["producerGroup"] != "TXG" ||
			e.Ext["tranStateTableOffset"] != strconv.FormatInt(half.QueueOffset, 10) || e.Ext["commitLogOffset"] != strconv.FormatInt(half.CommitLogOffset, 10) || !e.Oneway {
			t.Fatalf("%s: END_TRANSACTION after check %+v", body, e)
		}
		if (body == "broken" || body == "panics") != (e.Remark != "") {
			t.Fatalf("%s: remark %q", body, e.Remark)
		}
	}
	// A half message of another group: no check, no answer.
	other := msg("T", "foreign")
	other.SetProperty(message.PropertyProducerGroup, "OTHER")
	other.SetProperty(message.PropertyUniqClientMessageIDKeyIdx, "FOREIGN")
	if err := br.Store(other); err != nil {
		t.Fatal(err)
	}
	stored, _ := br.Messages("T", 0)
	if err := br.CheckTransaction("TXG", stored[len(stored)-1]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if checked["foreign"] != 0 {
		t.Fatal("checker called for another group's message")
	}
	for _, e := range br.EndTransactions() {
		if e.Ext["msgId"] == "FOREIGN" {
			t.Fatal("answered a check of another group")
		}
	}
}

// checkTx sends CHECK_TRANSACTION_STATE once the producer's heartbeat has
// told the broker about it.
func checkTx(t *testing.T, b *clienttest.Broker, group string, half *message.Message) {
	t.Helper()
	testutil.Eventually(t, clusterWait, func() error { return b.CheckTransaction(group, half) })
}
