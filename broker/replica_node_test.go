package broker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/ha"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

// TestInSyncGuard: a controller-mode master refuses a send before storing
// it while its effective SyncStateSet is smaller than minInSyncReplicas,
// and a fenced master fails a send waiting for replicas at once.
func TestInSyncGuard(t *testing.T) {
	dir, st, ep := openEpochStore(t)
	ln := testutil.Listen(t)
	m := ha.NewAutoSwitchMaster(st.CommitLog(), ln, ha.Options{}, ha.AutoSwitchConfig{SelfID: 1, Epochs: ep, AllAckInSyncStateSet: true},
		ha.SyncState{Set: []int64{1, 2}, Epoch: 1})
	defer m.Close()
	cfg := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: dir})
	cfg.MinInSyncReplicas = 3
	cfg.SlaveTimeout = 5 * time.Second
	b := &Broker{cfg: config.NewHolder(cfg, false)}
	n := &replicaNode{b: b, st: st, ep: ep, master: m, log: slog.New(slog.DiscardHandler)}
	g := inSyncGuard{Store: st, n: n}
	msg := &message.Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{}, BornTimestamp: time.Now().UnixMilli()}

	if _, err := g.PutMessage(context.Background(), msg); !errors.Is(err, ErrInSyncReplicasNotEnough) {
		t.Fatalf("set of 2, minInSyncReplicas 3: %v", err)
	}
	if max := st.CommitLog().MaxOffset(); max != 0 {
		t.Fatalf("a refused send was stored (log end %d)", max)
	}
	cfg2 := cfg.Clone()
	cfg2.MinInSyncReplicas = 2
	b.cfg = config.NewHolder(cfg2, false)
	res, err := g.PutMessage(context.Background(), msg)
	if err != nil {
		t.Fatalf("set of 2, minInSyncReplicas 2: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- n.WaitReplicas(context.Background(), res.End) }()
	time.Sleep(50 * time.Millisecond)
	n.SetFenced(true)
	select {
	case err := <-errc:
		if !errors.Is(err, ha.ErrReplicaTimeout) {
			t.Fatalf("fenced: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a waiting send outlived fencing")
	}
	if _, err := st.PutMessage(context.Background(), msg); !errors.Is(err, store.ErrNotWritable) {
		t.Fatalf("fenced master's store took a put: %v", err)
	}
}
