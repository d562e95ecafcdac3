package broker

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/ha"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/replica"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/epoch"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireReplica runs controller mode (enableControllerMode=true): the broker
// starts fenced, the replica manager registers at the controllers and
// switches it to master or slave (replicaNode); replication uses the
// auto-switch protocol. It answers GET_BROKER_HA_STATUS,
// GET_BROKER_EPOCH_CACHE, NOTIFY_BROKER_ROLE_CHANGED and
// EXCHANGE_BROKER_HA_INFO.
func (b *Broker) wireReplica(w *wiring, opts ha.Options) (send.Replicas, error) {
	cfg := b.cfg.Get()
	ep, err := epoch.Open(vfs.OS(), cfg.EpochFilePath(), w.st.CommitLog().MaxOffset())
	if err != nil {
		return nil, fmt.Errorf("broker: epoch file: %w", err)
	}
	n := &replicaNode{b: b, st: w.st, ep: ep, log: w.log.With("component", "replica"), ha: opts, fenced: true}
	n.fencedNow.Store(true)
	// Keep the epoch list short (a Java master sends at most 1000 entries
	// in its handshake): entries wholly below the log's first byte go.
	w.st.SetMinOffsetHook(func(min int64) {
		if err := ep.TruncatePrefixByOffset(min); err != nil {
			n.log.Error("drop epochs below the CommitLog min offset", "minOffset", min, "err", err)
		}
	})
	// Fenced until the controller names a role: not writable, not
	// registered, master-only services idle, consumers see only confirmed
	// data.
	b.cfg.SetRole(config.RoleSlave, -1)
	w.st.SetReplica(true)
	if !cfg.ReadUnCommitted {
		w.st.SetDispatchLimit(w.st.CommitLog().ConfirmOffset)
	}
	rc := replica.DefaultConfig()
	rc.ClusterName, rc.BrokerName = cfg.BrokerClusterName, cfg.BrokerName
	rc.Controllers = newControllerAddrs(b.cfg.Get, w.log.With("component", "replica")).get
	rc.IdentityPath = cfg.BrokerIdentityPath()
	rc.HeartbeatInterval = cfg.BrokerHeartbeatInterval
	rc.HeartbeatTimeout = cfg.ControllerHeartBeatTimeoutMills
	rc.SyncPeriod = cfg.SyncBrokerMetadataPeriod
	rc.LeaderRefreshPeriod = cfg.SyncControllerMetadataPeriod
	rc.LeaseDuration = cfg.MasterLeaseMillis
	rc.ElectionPriority = int64(cfg.BrokerElectionPriority)
	if err := os.MkdirAll(filepath.Dir(rc.IdentityPath), 0o755); err != nil {
		return nil, fmt.Errorf("broker: identity directory: %w", err)
	}
	mgr, err := replica.New(rc, n, b.client, w.log)
	if err != nil {
		return nil, fmt.Errorf("broker: controller mode: %w", err)
	}
	// The HA port is bound now, whatever the role, as Apache's broker
	// does: a port taken by something else stops the start, not a later
	// promotion.
	ln, err := b.haListen()
	if err != nil {
		return nil, fmt.Errorf("broker: controller mode: %w", err)
	}
	n.haLn = ha.NewListener(ln, w.log.With("component", "ha"))
	n.mgr = mgr
	b.replica.Store(n)
	w.m.starters = append(w.m.starters, mgr.Start)
	w.m.closers = append(w.m.closers, func() { _ = n.haLn.Close() }, n.close, mgr.Stop)

	b.RegisterProcessor(code.GetBrokerHAStatus, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return processor.Reply(req, "HA status", n.status())
	}, processor.PoolAdmin)
	b.RegisterProcessor(code.GetBrokerEpochCache, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		c := b.cfg.Get()
		body := protocol.EpochEntryCache{BrokerID: c.BrokerID, BrokerName: c.BrokerName, ClusterName: c.BrokerClusterName,
			MaxOffset: w.st.CommitLog().MaxOffset(), EpochList: []protocol.EpochEntry{}}
		for _, r := range ep.Ranges(math.MaxInt64) {
			body.EpochList = append(body.EpochList, protocol.EpochEntry{Epoch: r.Epoch, StartOffset: r.Start, EndOffset: r.End})
		}
		return processor.Reply(req, "epoch cache", body)
	}, processor.PoolAdmin)
	b.RegisterProcessor(code.NotifyBrokerRoleChanged, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		mgr.HandleNotify(req)
		return remoting.NewResponse(req, code.Success, ""), nil
	}, processor.PoolAdmin)
	b.RegisterProcessor(code.ExchangeBrokerHAInfo, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp := remoting.NewResponse(req, code.Success, "")
		resp.ExtFields = map[string]string{
			protocol.HdrMasterAddress:     b.Addr(),
			protocol.HdrMasterFlushOffset: strconv.FormatInt(w.st.CommitLog().MaxOffset(), 10),
		}
		if n.current().IsMaster() {
			resp.ExtFields[protocol.HdrMasterHaAddress] = b.haServerAddr()
		}
		return resp, nil
	}, processor.PoolAdmin)
	w.guard = func(s send.Store) send.Store { return inSyncGuard{Store: s, n: n} }
	return n, nil
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// fenced reports whether controller mode keeps this broker away from the
// nameservers (no role yet, or its master lease lapsed).
func (b *Broker) fenced() bool {
	n := b.replica.Load()
	return n != nil && n.isFenced()
}

// inSyncGuard refuses sends before they are stored when the SyncStateSet
// is smaller than minInSyncReplicas (§4.7 step 1).
type inSyncGuard struct {
	send.Store
	n *replicaNode
}

func (g inSyncGuard) PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error) {
	if err := g.n.checkInSync(); err != nil {
		return store.PutResult{}, err
	}
	return g.Store.PutMessage(ctx, msg)
}

func (g inSyncGuard) PutMessages(ctx context.Context, msgs []*message.Message) (store.PutResult, error) {
	if err := g.n.checkInSync(); err != nil {
		return store.PutResult{}, err
	}
	return g.Store.PutMessages(ctx, msgs)
}
