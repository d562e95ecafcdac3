package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/ha"
	"github.com/rmqgo/rmq/broker/replica"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/epoch"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// replicaListController answers what a master asks when a slave
// handshakes: who leads, and which replicas the set has.
type replicaListController struct {
	ids  []int64
	down atomic.Bool
}

func (c *replicaListController) Invoke(_ context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if c.down.Load() {
		return nil, errors.New("connection refused")
	}
	resp := remoting.NewResponse(req, code.Success, "")
	switch req.Code {
	case code.ControllerGetMetadataInfo:
		resp.SetExt(protocol.HdrControllerLeaderAddress, addr)
		resp.SetExt(protocol.HdrIsLeader, "true")
	case code.ControllerGetSyncStateData:
		info := protocol.ReplicasInfo{MasterBrokerID: 1, InSyncReplicas: []protocol.ReplicaIdentity{}, NotInSyncReplicas: []protocol.ReplicaIdentity{}}
		for _, id := range c.ids {
			info.NotInSyncReplicas = append(info.NotInSyncReplicas, protocol.ReplicaIdentity{BrokerID: id, BrokerName: "broker-a", Alive: true})
		}
		resp.Body = protocol.MustMarshal(protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{"broker-a": info}})
	default:
		resp.Code = code.RequestCodeNotSupported
	}
	return resp, nil
}

func (c *replicaListController) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	_, err := c.Invoke(ctx, addr, req)
	return err
}

// TestMasterAdmitsListedReplicasOnly: the auto-switch master of a broker
// in controller mode answers the handshake of an id the controller lists
// for its set and closes a stranger's (spec: unknown id → close); an id
// once admitted stays admitted when the controller is unreachable, an
// unchecked one is refused.
func TestMasterAdmitsListedReplicasOnly(t *testing.T) {
	dir, st, ep := openEpochStore(t)
	ctl := &replicaListController{ids: []int64{2, 3}}
	rc := replica.DefaultConfig()
	rc.ClusterName, rc.BrokerName, rc.IdentityPath = "C", "broker-a", filepath.Join(dir, "brokerIdentity")
	rc.Controllers = func() []string { return []string{"127.0.0.1:1"} }
	rc.RequestTimeout = time.Second
	n := &replicaNode{st: st, ep: ep, log: slog.New(slog.DiscardHandler)}
	mgr, err := replica.New(rc, n, ctl, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.mgr = mgr
	ln := testutil.Listen(t)
	m := ha.NewAutoSwitchMaster(st.CommitLog(), ln, ha.Options{}, ha.AutoSwitchConfig{SelfID: 1, Epochs: ep, IsReplica: n.replicaCheck(1)},
		ha.SyncState{Set: []int64{1}, Epoch: 1})
	m.Start()
	defer m.Close()

	handshake := func(id int64) error {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write(ha.AppendSlaveHandshake(nil, ha.SlaveHello{SlaveID: id})); err != nil {
			return err
		}
		f, err := ha.NewMasterFrameReader(nc).Next()
		if err == nil && f.State != ha.StateHandshake {
			return errors.New("no handshake")
		}
		return err
	}
	if err := handshake(2); err != nil {
		t.Fatalf("listed replica 2: %v", err)
	}
	for _, id := range []int64{9, 1, 0} {
		if err := handshake(id); err == nil || (!errors.Is(err, io.EOF) && !isConnReset(err)) {
			t.Fatalf("id %d: %v, want the connection closed", id, err)
		}
	}
	ctl.down.Store(true)
	if err := handshake(2); err != nil {
		t.Fatalf("admitted replica 2 with the controller down: %v", err)
	}
	if err := handshake(3); err == nil {
		t.Fatal("replica 3 admitted without asking the controller")
	}
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// openEpochStore opens a small store and an epoch list holding epoch 1
// from offset 0, both closed with the test.
func openEpochStore(t *testing.T) (string, *store.Store, *epoch.Cache) {
	t.Helper()
	dir := t.TempDir()
	sc := store.DefaultConfig(dir)
	sc.CommitLog.FileSize = 1 << 20
	sc.CommitLog.Preallocate = false
	sc.Logger = slog.New(slog.DiscardHandler)
	st, err := store.Open(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ep, err := epoch.Open(vfs.OS(), filepath.Join(dir, "epochFileCheckpoint"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	return dir, st, ep
}
