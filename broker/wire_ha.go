package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/ha"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireHA plugs classic master/slave replication in (package ha): a master
// listens on haListenPort and makes SYNC_MASTER sends wait for slave acks
// (the returned send.Replicas); a slave replicates from haMasterAddress or
// the HA address its REGISTER_BROKER answers name. Both answer
// GET_BROKER_HA_STATUS.
func (b *Broker) wireHA(w *wiring) (send.Replicas, error) {
	cfg := b.cfg.Get()
	opts := ha.Options{
		HeartbeatInterval:    cfg.HaSendHeartbeatInterval,
		HousekeepingInterval: cfg.HaHousekeepingInterval,
		TransferBatchSize:    cfg.HaTransferBatchSize,
		MaxGapNotInSync:      int64(cfg.HaMaxGapNotInSync),
		TLS:                  b.tls.ClientTLS(),
		Logger:               w.log.With("component", "ha"),
	}
	if cfg.HaFlowControlEnable {
		opts.MaxTransferBytesPerSecond = cfg.MaxHaTransferByteInSecond
	}
	if cfg.EnableControllerMode {
		return b.wireReplica(w, opts)
	}
	var (
		status   func() protocol.HARuntimeInfo
		replicas send.Replicas
	)
	if cfg.IsMaster() {
		// SYNC_MASTER with inSyncReplicas ≤ 1 is warned about at startup
		// (config.Warnings, logged by the broker binary).
		ln, err := b.haListen()
		if err != nil {
			// Apache refuses to start; a derived haListenPort (listenPort+1)
			// that happens to be taken should not stop a broker that has no
			// slaves, so this is logged and sends that need slaves time out.
			w.log.Error("HA listener: replication unavailable", "err", err)
			status = func() protocol.HARuntimeInfo {
				return protocol.HARuntimeInfo{Master: true, MasterCommitLogMaxOffset: w.st.CommitLog().MaxOffset(), HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
			}
			replicas = noReplicas{cfg: b.cfg.Get}
		} else {
			m := ha.NewMaster(w.st.CommitLog(), ln, opts)
			w.m.starters = append(w.m.starters, m.Start)
			w.m.closers = append(w.m.closers, func() { _ = m.Close() })
			status = m.Status
			replicas = replicaWaiter{cfg: b.cfg.Get, m: m}
		}
	} else {
		w.st.SetReplica(true)
		s := ha.NewSlave(w.st.CommitLog(), b.haMasterAddr, opts)
		w.m.starters = append(w.m.starters, s.Start)
		w.m.closers = append(w.m.closers, s.Close)
		status = s.Status
	}
	b.RegisterProcessor(code.GetBrokerHAStatus, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return processor.Reply(req, "HA status", status())
	}, processor.PoolAdmin)
	return replicas, nil
}

// haListen opens the HA listener on bindAddress:haListenPort and records
// the port actually bound (haListenPort 0 picks a free one).
func (b *Broker) haListen() (net.Listener, error) {
	cfg := b.cfg.Get()
	host := cfg.BindAddress
	if host == "" {
		host = "0.0.0.0"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.HaListenPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("HA listener %s: %w", addr, err)
	}
	b.haPort.Store(int32(ln.Addr().(*net.TCPAddr).Port))
	// tls.server.mode applies here too (Apache's HA port has no TLS: ours
	// is an extension, docs/operations.md).
	tln, err := remoting.NewTLSListener(ln, b.tls.Remoting(), b.log.With("component", "ha"))
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("HA listener %s: %w", addr, err)
	}
	return tln, nil
}

// haMasterAddr is where a slave replicates from: haMasterAddress when set
// (Apache takes it when it has at least 6 characters), else the master's
// haServerAddr from the last REGISTER_BROKER answer.
func (b *Broker) haMasterAddr() string {
	if a := b.cfg.Get().HaMasterAddress; len(a) >= 6 {
		return a
	}
	return b.masterHAAddr.Load().(string)
}

// haServerAddr is the HA address this broker advertises: brokerIP2 and
// the port actually listened on.
func (b *Broker) haServerAddr() string {
	cfg := b.cfg.Get()
	if p := b.haPort.Load(); p > 0 {
		return net.JoinHostPort(cfg.BrokerIP2, strconv.Itoa(int(p)))
	}
	return cfg.HAServerAddr()
}

// mustWaitReplicas reports whether a SYNC_MASTER send waits (5.x: only
// with inSyncReplicas > 1); the needed count includes the master.
func mustWaitReplicas(cfg *config.Config) bool {
	return cfg.BrokerRole == config.RoleSyncMaster && cfg.InSyncReplicas > 1
}

// replicaWaiter is send.Replicas over the HA master.
type replicaWaiter struct {
	cfg func() *config.Config
	m   *ha.Master
}

func (r replicaWaiter) WaitReplicas(ctx context.Context, end int64) error {
	cfg := r.cfg()
	if !mustWaitReplicas(cfg) {
		return nil
	}
	return r.m.WaitAcks(ctx, end, cfg.InSyncReplicas, cfg.SlaveTimeout)
}

// countedReplicas counts the sends waiting in r (Broker.replicaWaits).
type countedReplicas struct {
	r     send.Replicas
	waits *atomic.Int64
}

func (c countedReplicas) WaitReplicas(ctx context.Context, end int64) error {
	c.waits.Add(1)
	defer c.waits.Add(-1)
	return c.r.WaitReplicas(ctx, end)
}

// noReplicas answers a master without an HA listener: sends that need
// slaves fail at once.
type noReplicas struct{ cfg func() *config.Config }

func (r noReplicas) WaitReplicas(context.Context, int64) error {
	if !mustWaitReplicas(r.cfg()) {
		return nil
	}
	return fmt.Errorf("%w: no HA listener", ha.ErrReplicaTimeout)
}
