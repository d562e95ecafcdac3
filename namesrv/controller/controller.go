package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/pkg/tlsconfig"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/controller/mux"
	"github.com/rmqgo/rmq/namesrv/controller/raftstore"
	"github.com/rmqgo/rmq/namesrv/controller/state"
)

// applyTimeout bounds one raft.Apply (docs/replication.md §2.6 item 3).
const applyTimeout = 5 * time.Second

// barrierTimeout bounds the new leader's wait for every committed entry to
// be applied before it serves.
const barrierTimeout = 10 * time.Second

// Deps replaces parts of a controller (tests). Zero fields get the real
// ones: a TCP transport on the peer address shared with remoting, pebble
// log and stable stores and a file snapshot store under
// controllerStorePath.
type Deps struct {
	Transport   raft.Transport
	LogStore    raft.LogStore
	StableStore raft.StableStore
	Snapshots   raft.SnapshotStore
	// Addr maps a peer to its raft address (inmem transports name
	// themselves); nil uses the peer's host:port.
	Addr func(nsconfig.Peer) raft.ServerAddress
	// Now is the liveness clock.
	Now func() time.Time
	// Raft adjusts hashicorp's configuration (shorter timeouts in tests).
	Raft func(*raft.Config)
	// TLS is the embedding nameserver's TLS setup, shared; nil makes the
	// controller its own from cfg's tls.* keys (standalone).
	TLS *tlsconfig.Setup
}

// Controller is one controller node.
type Controller struct {
	log   *slog.Logger
	cfg   atomic.Pointer[Config]
	cfgMu sync.Mutex // serializes config updates and their persistence
	self  nsconfig.Peer
	peers []nsconfig.Peer
	addr  func(nsconfig.Peer) raft.ServerAddress

	fsm  *state.FSM
	raft *raft.Raft
	live *liveness
	now  func() time.Time

	notifyCh <-chan bool // raft leadership changes
	tasks    chan func() // the decide loop's queue (one goroutine)
	serving  atomic.Bool // leader, and every committed entry applied
	notify   *notifier

	mux      *mux.Mux
	remote   *remoting.Server
	tls      *tlsconfig.Setup
	fastExec *remoting.Executor
	client   *remoting.Client
	closers  []io.Closer

	// held: sets whose election waits until the time given
	// (holdElection).
	heldMu sync.Mutex
	held   map[string]time.Time
	// graceOverride replaces masterGoneGrace when > 0 (tests that must
	// not depend on the scheduler keeping within 100 ms).
	graceOverride atomic.Int64

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New builds a controller and starts raft; with the default transport it
// also listens on its peer address for raft and remoting.
func New(cfg Config, deps Deps, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	self, peers, err := cfg.SelfPeer()
	if err != nil {
		return nil, err
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	c := &Controller{
		log: log.With("controller", self.ID), self: self, peers: peers, addr: deps.Addr,
		fsm: state.NewFSM(), live: newLiveness(now, cfg.ControllerLivenessWarmup), now: now,
		tasks: make(chan func(), 1024), stop: make(chan struct{}), held: map[string]time.Time{},
		client:   remoting.NewClient(remoting.DefaultClientConfig(), log),
		fastExec: remoting.NewExecutor("ControllerHeartbeat", 4, 50000),
	}
	if c.addr == nil {
		c.addr = func(p nsconfig.Peer) raft.ServerAddress { return raft.ServerAddress(p.Addr) }
	}
	c.tls = deps.TLS
	if c.tls == nil {
		st, err := tlsconfig.Start(cfg.Settings, nil, c.log)
		if err != nil {
			c.fastExec.Close()
			_ = c.client.Close()
			return nil, fmt.Errorf("controller: %w", err)
		}
		c.tls = st
		c.closers = append(c.closers, closerFunc(func() error { st.Close(); return nil }))
	}
	if ctls := c.tls.ClientTLS(); ctls != nil {
		// Notifications to brokers (notifyBrokerRoleChanged) over TLS.
		_ = c.client.Close()
		ccfg := remoting.DefaultClientConfig()
		ccfg.TLS = ctls
		c.client = remoting.NewClient(ccfg, log)
	}
	c.notify = newNotifier(c.client, c.log)
	c.cfg.Store(&cfg)
	if err := c.startRaft(&cfg, deps); err != nil {
		if c.raft != nil {
			_ = c.raft.Shutdown().Error()
		}
		c.closeAll()
		return nil, err
	}
	c.wg.Add(3)
	go c.decideLoop()
	go c.leadershipLoop()
	go c.scanBrokersLoop()
	return c, nil
}

func (c *Controller) startRaft(cfg *Config, deps Deps) error {
	trans := deps.Transport
	if trans == nil {
		var err error
		if trans, err = c.listen(); err != nil {
			return err
		}
	}
	logs, stable, snaps := deps.LogStore, deps.StableStore, deps.Snapshots
	if logs == nil || stable == nil {
		st, err := raftstore.Open(raftstore.DefaultConfig(filepath.Join(cfg.ControllerStorePath, "raft")))
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		c.closers = append(c.closers, st)
		logs, stable = st, st
	}
	if snaps == nil {
		if err := os.MkdirAll(cfg.ControllerStorePath, 0o755); err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		fs, err := raft.NewFileSnapshotStoreWithLogger(cfg.ControllerStorePath, 3, c.hclog())
		if err != nil {
			return fmt.Errorf("controller: snapshot store: %w", err)
		}
		snaps = fs
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.self.ID)
	rc.SnapshotInterval = cfg.ControllerRaftSnapshotInterval
	rc.SnapshotThreshold = cfg.ControllerRaftSnapshotThreshold
	rc.Logger = c.hclog()
	notifyCh := make(chan bool, 16)
	rc.NotifyCh = notifyCh
	if deps.Raft != nil {
		deps.Raft(rc)
	}
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("controller: read raft state: %w", err)
	}
	if !has {
		// Every node bootstraps with the same static peer list, so
		// concurrent bootstraps agree.
		var servers []raft.Server
		for _, p := range c.peers {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: c.addr(p)})
		}
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return fmt.Errorf("controller: bootstrap: %w", err)
		}
	}
	r, err := raft.NewRaft(rc, c.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("controller: start raft: %w", err)
	}
	c.raft = r
	c.notifyCh = notifyCh
	if deps.Transport == nil {
		return c.serveRemoting(cfg)
	}
	return nil
}

// listen opens the raft transport on this node's raft address. DLedger
// flavour: the port is shared with remoting (mux). jRaft flavour: requests
// have their own port, so raft gets hashicorp's plain TCP transport.
func (c *Controller) listen() (raft.Transport, error) {
	adv, err := net.ResolveTCPAddr("tcp", c.self.Addr)
	if err != nil {
		return nil, fmt.Errorf("controller: peer address %s: %w", c.self.Addr, err)
	}
	rtls, err := c.raftTLS()
	if err != nil {
		return nil, err
	}
	if c.self.RPCAddr != c.self.Addr {
		if rtls.Server.Mode == remoting.TLSDisabled && rtls.Client == nil {
			tt, err := raft.NewTCPTransportWithLogger(c.self.Addr, adv, 3, 10*time.Second, c.hclog())
			if err != nil {
				return nil, fmt.Errorf("controller: raft transport on %s: %w", c.self.Addr, err)
			}
			c.closers = append(c.closers, closerFunc(func() error { tt.CloseStreams(); return tt.Close() }))
			return tt, nil
		}
		ln, err := net.Listen("tcp", c.self.Addr)
		if err != nil {
			return nil, fmt.Errorf("controller: raft transport on %s: %w", c.self.Addr, err)
		}
		return c.networkTransport(mux.NewListenerStreamLayer(ln, adv), rtls, ln)
	}
	bind := c.self.Addr
	if h := c.cfg.Load().BindHost; h != "" {
		_, port, err := net.SplitHostPort(c.self.Addr)
		if err != nil {
			return nil, fmt.Errorf("controller: peer address %s: %w", c.self.Addr, err)
		}
		bind = net.JoinHostPort(h, port)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("controller: listen on peer address %s (bound on %s): %w", c.self.Addr, bind, err)
	}
	m, err := mux.New(ln, mux.DefaultConfig(), c.log)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.mux = m
	return c.networkTransport(mux.NewStreamLayer(m, adv), rtls, m)
}

// networkTransport is raft's transport over sl with rtls; listener is
// closed when that fails.
func (c *Controller) networkTransport(sl *mux.StreamLayer, rtls mux.TLS, listener io.Closer) (raft.Transport, error) {
	sl, err := sl.WithTLS(rtls)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("controller: %w", err)
	}
	nt := raft.NewNetworkTransportWithLogger(sl, 3, 10*time.Second, c.hclog())
	// Close leaves pooled outbound connections open; close them too.
	c.closers = append(c.closers, closerFunc(func() error { nt.CloseStreams(); return nt.Close() }))
	return nt, nil
}

// raftTLS is raft's TLS between controllers (docs/operations.md "TLS"),
// from the tls.* keys: accepted connections as tls.server.mode says
// (permissive: TLS or plaintext; enforcing: TLS only), dialled ones over TLS
// with tls.enable, and with tls.server.mode=enforcing too, since the peers
// of an enforcing node enforce as well (they share their configuration).
func (c *Controller) raftTLS() (mux.TLS, error) {
	t := mux.TLS{Server: c.tls.Remoting(), Client: c.tls.ClientTLS()}
	if t.Client == nil && t.Server.Mode == remoting.TLSEnforcing {
		cc, err := c.tls.Settings.ClientConfig()
		if err != nil {
			return t, fmt.Errorf("controller: raft TLS: %w", err)
		}
		t.Client = cc
	}
	return t, nil
}

// serveRemoting answers brokers and tools on the shared port.
func (c *Controller) serveRemoting(cfg *Config) error {
	scfg := remoting.DefaultServerConfig()
	scfg.ListenAddr = c.self.RPCAddr
	scfg.Workers = cfg.ControllerThreadPoolNums
	scfg.QueueSize = cfg.ControllerRequestThreadPoolQueueCapacity
	scfg.TLS = c.tls.Remoting()
	srv, err := remoting.NewServer(scfg, c.log)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	c.Register(srv)
	if c.mux != nil {
		err = srv.Serve(c.mux.Remoting())
	} else {
		err = srv.Start()
	}
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	c.remote = srv
	return nil
}

// Register installs the controller's request handlers on srv, and the
// connection-close hook that expires a broker at once. Heartbeats and
// metadata lookups get their own workers: requests waiting on the decide
// loop (a slow raft apply) must not delay the heartbeats that keep brokers
// alive.
func (c *Controller) Register(srv *remoting.Server) {
	for reqCode, h := range c.handlers() {
		var ex *remoting.Executor
		if reqCode == code.BrokerHeartbeat || reqCode == code.ControllerGetMetadataInfo {
			ex = c.fastExec
		}
		srv.Register(reqCode, h, ex)
	}
	srv.OnClose(func(ch *remoting.Channel) { c.brokersGone(c.live.removeConn(ch.ID())) })
}

// Addr is where brokers and tools reach this node (DLedger flavour: the
// peer address, shared with raft).
func (c *Controller) Addr() string {
	if c.remote != nil {
		return c.remote.Addr()
	}
	return c.self.RPCAddr
}

// IsLeader reports whether this node serves leader-only requests.
func (c *Controller) IsLeader() bool { return c.serving.Load() }

// Raft exposes the raft node (tests, admin).
func (c *Controller) Raft() *raft.Raft { return c.raft }

// State is the replicated state machine (read-only use).
func (c *Controller) State() *state.FSM { return c.fsm }

// Close stops the controller: scanners, raft, the listener and the stores.
func (c *Controller) Close() error {
	var err error
	c.stopOnce.Do(func() {
		close(c.stop)
		c.serving.Store(false)
		if c.raft != nil {
			if e := c.raft.Shutdown().Error(); e != nil {
				err = fmt.Errorf("controller: raft shutdown: %w", e)
			}
		}
		c.wg.Wait()
		c.closeAll()
	})
	return err
}

func (c *Controller) closeAll() {
	if c.remote != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.remote.Shutdown(ctx)
		cancel()
	}
	if c.mux != nil {
		_ = c.mux.Close()
	}
	for i := len(c.closers) - 1; i >= 0; i-- {
		_ = c.closers[i].Close()
	}
	c.notify.close()
	_ = c.client.Close()
	c.fastExec.Close()
}

// decideLoop runs decisions one at a time (upstream's single event
// thread): read state, decide, apply, answer. The compare-and-set commands
// would keep concurrent decisions safe anyway; serializing avoids
// needless conflicts.
func (c *Controller) decideLoop() {
	defer c.wg.Done()
	for {
		select {
		case f := <-c.tasks:
			f()
		case <-c.stop:
			return
		}
	}
}

// decide runs f on the decide loop and returns its answer; ctx or Close
// end the wait.
func decide[T any](ctx context.Context, c *Controller, f func() T) (T, error) {
	done := make(chan T, 1)
	var zero T
	select {
	case c.tasks <- func() { done <- f() }:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-c.stop:
		return zero, errStopped
	}
	select {
	case v := <-done:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-c.stop:
		return zero, errStopped
	}
}

var errStopped = errors.New("controller: stopped")

// apply commits one command and returns its result from the FSM.
func (c *Controller) apply(cmd state.Command) (state.Result, error) {
	data, err := state.Encode(cmd)
	if err != nil {
		return state.Result{}, err
	}
	f := c.raft.Apply(data, applyTimeout)
	if err := f.Error(); err != nil {
		return state.Result{}, fmt.Errorf("controller: apply %s: %w", cmd.Type(), err)
	}
	res, ok := f.Response().(state.Result)
	if !ok {
		return state.Result{}, fmt.Errorf("controller: apply %s: unexpected FSM response %T", cmd.Type(), f.Response())
	}
	return res, nil
}

// leadershipLoop turns raft's leadership notifications into serving: a
// new leader first waits (Barrier) until every entry committed by earlier
// leaders is applied, so it cannot decide an election twice.
func (c *Controller) leadershipLoop() {
	defer c.wg.Done()
	stopScans := func() {}
	end := func() {
		c.serving.Store(false)
		stopScans()
		stopScans = func() {}
	}
	defer end()
	for {
		select {
		case <-c.stop:
			return
		case leader := <-c.notifyCh:
			end()
			if !leader {
				c.log.Info("controller: lost leadership")
				continue
			}
			if !c.awaitBarrier() {
				continue
			}
			c.serving.Store(true)
			stopScans = c.startMasterScan()
			c.log.Info("controller: serving as leader")
		}
	}
}

// awaitBarrier waits until every entry committed before this leadership
// is applied; it retries while this node stays leader, so a slow apply
// does not leave a leader that never serves.
func (c *Controller) awaitBarrier() bool {
	for c.raft.State() == raft.Leader {
		err := c.raft.Barrier(barrierTimeout).Error()
		if err == nil {
			return c.raft.State() == raft.Leader
		}
		c.log.Warn("controller: barrier after winning leadership failed", "err", err)
		select {
		case <-c.stop:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// startMasterScan runs scanMastersLoop until the returned stop is called
// (stop waits for it).
func (c *Controller) startMasterScan() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.scanMastersLoop(ctx) }()
	return func() { cancel(); <-done }
}

// hclog routes hashicorp/raft's logs into slog.
func (c *Controller) hclog() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Info, Output: slogWriter{c.log}, DisableTime: true})
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	switch {
	case strings.Contains(line, "[ERROR]"):
		w.log.Error(line)
	case strings.Contains(line, "[WARN]"):
		w.log.Warn(line)
	default:
		w.log.Debug(line)
	}
	return len(p), nil
}
