// Package broker assembles a RocketMQ broker: configuration, topic table,
// nameserver registration, request processors and the remoting server.
// New + Start + Shutdown run one in-process, which is how tests use it.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/broker/admin"
	"github.com/rmqgo/rmq/broker/auth"
	"github.com/rmqgo/rmq/broker/brokerstats"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/mapping"
	"github.com/rmqgo/rmq/broker/metrics"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/registry"
	"github.com/rmqgo/rmq/broker/slavesync"
	"github.com/rmqgo/rmq/broker/statictopic"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Option customises New.
type Option func(*options)

type options struct {
	registerInitialDelay time.Duration
	registerPeriod       time.Duration
	registerDebounce     time.Duration
	mappings             mapping.Source
	offsets              admin.QueueOffsets
	runtime              admin.RuntimeInfoProvider
	stateVersion         func() int64
	topicDeleted         func(topic string)
	persistConfig        bool
	noStore              bool
	lockMaxLiveTime      time.Duration
	liteExpirationUnit   time.Duration
	commitLogFS          vfs.FS
}

// WithRegisterTiming overrides nameserver registration timing (tests): the
// delay of the first periodic round, the period (not clamped), and the
// debounce window after topic changes. Zero keeps the default.
func WithRegisterTiming(initialDelay, period, debounce time.Duration) Option {
	return func(o *options) {
		o.registerInitialDelay, o.registerPeriod, o.registerDebounce = initialDelay, period, debounce
	}
}

// WithCommitLogFS puts the CommitLog on fs (fault injection in tests).
func WithCommitLogFS(fs vfs.FS) Option { return func(o *options) { o.commitLogFS = fs } }

// WithMappings plugs in the static-topic mapping manager.
func WithMappings(s mapping.Source) Option { return func(o *options) { o.mappings = s } }

// WithStoreStats plugs the message store into the admin statistics
// (GET_TOPIC_STATS_INFO offsets, GET_BROKER_RUNTIME_INFO store keys); either
// may be nil.
func WithStoreStats(q admin.QueueOffsets, r admin.RuntimeInfoProvider) Option {
	return func(o *options) { o.offsets, o.runtime = q, r }
}

// WithStateVersion supplies the store's state-machine version, written into
// the topic table's DataVersion.stateVersion as Java does.
func WithStateVersion(f func() int64) Option { return func(o *options) { o.stateVersion = f } }

// WithTopicDeleted runs f after DELETE_TOPIC_IN_BROKER removed a topic, so
// the store can drop its queues, offsets and mapping.
func WithTopicDeleted(f func(topic string)) Option { return func(o *options) { o.topicDeleted = f } }

// WithoutStore builds a broker with no message store (admin-only tests).
func WithoutStore() Option { return func(o *options) { o.noStore = true } }

// WithLockMaxLiveTime sets the orderly lock expiry, Java's system property
// rocketmq.broker.rebalance.lockMaxLiveTime (not a broker.conf key; 60 s
// by default). Zero keeps the default.
func WithLockMaxLiveTime(d time.Duration) Option { return func(o *options) { o.lockMaxLiveTime = d } }

// WithLiteExpirationUnit sets the unit of the lite.topic.expiration topic
// attribute (a minute by default; not a broker.conf key). Tests shorten it
// so that lite topics expire within seconds. Zero keeps the default.
func WithLiteExpirationUnit(d time.Duration) Option {
	return func(o *options) { o.liteExpirationUnit = d }
}

// WithoutConfigPersistence keeps runtime config updates in memory only.
func WithoutConfigPersistence() Option { return func(o *options) { o.persistConfig = false } }

// Broker is one broker instance.
type Broker struct {
	log    *slog.Logger
	cfg    *config.Holder
	topics *topic.Manager
	maps   mapping.Source
	admin  *admin.Processor
	auth   *auth.Service
	// innerSigner signs the broker's own requests (nil without
	// innerClientAuthenticationCredentials).
	innerSigner *auth.Signer

	server *remoting.Server
	grpc   *grpcserver.Server // nil unless enableGrpcServer
	// grpcLive is grpc once started, for readers that run concurrently
	// with Start (the CommitLog's group commit).
	grpcLive atomic.Pointer[grpcserver.Server]
	// replicaWaits counts the sends parked waiting for their replicas'
	// acks (SYNC_MASTER): in flight, but appending nothing more.
	replicaWaits atomic.Int64
	// grpcCert is the gRPC endpoint's certificate source (with grpc).
	grpcCert *tlsconfig.Server
	// grpcProducers are the gRPC producers the transaction check calls
	// back (wire_grpc_produce.go).
	grpcProducers *grpcserver.Producers
	client        *remoting.Client
	tls           *tlsconfig.Setup // tls.* keys: server and client sides
	registrar     *registry.Registrar
	store         *store.Store
	msg           *messaging
	pools         map[processor.Pool]*remoting.Executor
	metrics       *metrics.Metrics // nil: metricsExporterType exports nothing
	// ffStop ends the fast-failure scan (pools.go); ffDone is closed when
	// it has ended.
	ffStop, ffDone chan struct{}
	// stats are the per-topic and per-group call statistics (Apache's
	// BrokerStatsManager: VIEW_BROKER_STATS_DATA), sampled while started.
	stats *brokerstats.Manager

	// grpcClients are the 5.x consumers' registry channels
	// (wire_grpc_consume.go).
	grpcClients grpcClients

	boot       time.Time
	port       atomic.Int32
	masterAddr atomic.Value // string: from REGISTER_BROKER answers (slaves)
	// masterHAAddr is the master's haServerAddr from the same answers.
	masterHAAddr atomic.Value      // string
	haPort       atomic.Int32      // the HA listener's port (masters)
	slaveSync    *slavesync.Syncer // copies the master's metadata (classic slaves)
	// vip serves what Apache's slaves ask on the fast port (wire_vip.go);
	// authHook is the main port's auth hook, which it shares.
	vip      *remoting.Server
	authHook remoting.RPCHook
	// replica is controller mode's node (nil in classic mode).
	replica atomic.Pointer[replicaNode]

	mu      sync.Mutex
	started bool
	stopped bool
}

// New builds a broker from a loaded configuration (config.Load, or
// config.Default plus changes in tests). Nothing listens until Start.
func New(cfg *config.Config, log *slog.Logger, opts ...Option) (*Broker, error) {
	if cfg == nil {
		return nil, errors.New("broker: nil config")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := options{persistConfig: true}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.Clone()
	cfg.Finalize()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker: invalid config: %w", err)
	}
	log = log.With("broker", cfg.BrokerName)
	if err := os.MkdirAll(cfg.ConfigDir(), 0o755); err != nil {
		return nil, fmt.Errorf("broker: create config directory: %w", err)
	}

	b := &Broker{log: log, boot: time.Now(), maps: o.mappings, grpcProducers: grpcserver.NewProducers(), stats: brokerstats.New(nil)}
	if b.maps == nil {
		mgr, err := statictopic.OpenManager(statictopic.ManagerOptions{
			Path: cfg.TopicQueueMappingPath(), BrokerName: cfg.BrokerName, Logger: log.With("component", "statictopic"),
		})
		if err != nil {
			return nil, fmt.Errorf("broker: static topic mappings: %w", err)
		}
		b.maps = mgr
	}
	b.masterAddr.Store("")
	b.masterHAAddr.Store("")
	b.cfg = config.NewHolder(cfg, o.persistConfig)

	var err error
	b.topics, err = topic.New(topic.Options{
		Config:       b.cfg.Get,
		Path:         cfg.TopicConfigPath(),
		StateVersion: b.stateVersion(o.stateVersion),
		Logger:       log.With("component", "topic"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: load topics: %w", err)
	}

	// One TLS setup for the remoting and HA ports and the outgoing
	// connections; the certificate files are watched until closeLocal.
	// useTLS (Apache's NettyClientConfig key) also makes the outgoing
	// connections use TLS, as tls.enable does.
	tlsSet := cfg.Settings
	tlsSet.Enable = tlsSet.Enable || cfg.UseTLS
	b.tls, err = tlsconfig.Start(tlsSet, []string{cfg.BrokerIP1, cfg.BrokerIP2}, log.With("component", "tls"))
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	scfg := remoting.DefaultServerConfig()
	scfg.ListenAddr = cfg.ListenAddr()
	scfg.TLS = b.tls.Remoting()
	if cfg.FrameMaxLength > 0 {
		scfg.MaxFrameSize = cfg.FrameMaxLength
	}
	if cfg.ServerChannelMaxIdleTimeSeconds > 0 {
		scfg.IdleTimeout = time.Duration(cfg.ServerChannelMaxIdleTimeSeconds) * time.Second
	}
	b.server, err = remoting.NewServer(scfg, log.With("component", "remoting"))
	if err != nil {
		b.tls.Close()
		return nil, fmt.Errorf("broker: remoting server: %w", err)
	}
	// The producers' hot path reads its header without a map per request.
	// Every handler on these codes' chain (metrics, busy check, static
	// topics, the send processor) reads fields through Command.Ext,
	// ExtBytes or Fields.
	b.server.DeferExtFields(code.SendMessageV2, code.SendBatchMessage)
	ccfg := b.clientConfig()
	b.client = remoting.NewClient(ccfg, log.With("component", "namesrv-client"))

	b.pools = newPools(cfg)

	if err := b.wireAuth(cfg, log); err != nil {
		b.closeLocal()
		return nil, err
	}

	if !o.noStore {
		sc, err := storeConfig(cfg, log)
		if err != nil {
			b.closeLocal()
			return nil, err
		}
		// Group commit: with other requests in flight an append waits a
		// scheduler turn for theirs (commitlog.Config.Contended). Sends
		// parked until their slaves ack are left out: they append nothing
		// more, and under sync replication most sends in flight are
		// parked, so counting them made every append yield for nothing.
		sc.CommitLog.Contended = func() bool {
			n := b.server.Handling() - b.replicaWaits.Load()
			if g := b.grpcLive.Load(); g != nil {
				n += g.InFlight()
			}
			return n > 1
		}
		if o.commitLogFS != nil {
			sc.CommitLog.FS = o.commitLogFS
		}
		if b.store, err = store.Open(sc); err != nil {
			b.closeLocal()
			return nil, fmt.Errorf("broker: open store: %w", err)
		}
	}
	if b.metrics, err = b.newMetrics(cfg, log); err != nil {
		b.closeLocal()
		return nil, fmt.Errorf("broker: %w", err)
	}
	if !o.noStore {
		if o.offsets == nil {
			o.offsets = storeStats{b.store}
		}
		if o.runtime == nil {
			o.runtime = storeStats{b.store}
		}
		if b.msg, err = b.installMessaging(b.store, log, &o); err != nil {
			b.closeLocal()
			return nil, err
		}
		deleted := o.topicDeleted
		o.topicDeleted = func(topic string) {
			if err := b.store.DeleteTopic(topic); err != nil {
				b.log.Error("delete topic from store", "topic", topic, "err", err)
			}
			b.msg.pull.ForgetTopic(topic)
			if mgr, ok := b.maps.(*statictopic.Manager); ok {
				if _, err := mgr.Delete(topic); err != nil {
					b.log.Error("delete static topic mapping", "topic", topic, "err", err)
				}
			}
			if deleted != nil {
				deleted(topic)
			}
		}
	}

	b.admin, err = admin.New(admin.Deps{
		Config:        b.cfg,
		Topics:        b.topics,
		Mappings:      b.maps,
		Offsets:       o.offsets,
		Runtime:       o.runtime,
		Pools:         b.poolStats,
		Stats:         b.stats,
		RetryTopicsOf: b.popRetryTopicsOf,
		Hooks: admin.Hooks{ConfigChanged: b.configChanged, TopicDeleted: o.topicDeleted, TopicsChanged: func(ctx context.Context, names []string) {
			b.registrar.RegisterTopics(ctx, names)
		}},
		BootTime: b.boot,
		Logger:   log.With("component", "admin"),
	})
	if err != nil {
		b.closeLocal()
		return nil, err
	}
	b.admin.Register(b)

	period := func() time.Duration { return registry.ClampPeriod(b.cfg.Get().RegisterNameServerPeriod) }
	if o.registerPeriod > 0 {
		period = func() time.Duration { return o.registerPeriod }
	}
	b.registrar = registry.New(b.client, registrationSource{b}, registry.Options{
		InitialDelay: o.registerInitialDelay,
		Period:       period,
		Debounce:     o.registerDebounce,
		OnResults:    b.registered,
		Encoding: func() registry.Encoding {
			c := b.cfg.Get()
			return registry.Encoding{Compressed: c.CompressedRegister, Split: c.EnableSplitRegistration, SplitSize: c.SplitRegistrationSize}
		},
		Logger: log.With("component", "registry"),
	})
	// A changed topic is registered on its own (Apache's
	// registerIncrementBrokerData); a change of the version alone, in full.
	b.topics.OnChange(func(names []string) {
		if len(names) == 0 {
			b.registrar.Trigger()
			return
		}
		b.registrar.TriggerTopics(names)
	})
	return b, nil
}

// Start listens, registers with every nameserver and starts the periodic
// registration.
func (b *Broker) Start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started || b.stopped {
		return errors.New("broker: already started")
	}
	if err := b.server.Start(); err != nil {
		return fmt.Errorf("broker: start: %w", err)
	}
	_, portText, err := net.SplitHostPort(b.server.Addr())
	if err != nil {
		return fmt.Errorf("broker: listener address %q: %w", b.server.Addr(), err)
	}
	port, _ := strconv.Atoi(portText)
	b.port.Store(int32(port))
	if err := b.startGrpc(); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = b.server.Shutdown(sctx)
		cancel()
		return err
	}
	if err := b.metrics.Start(); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = b.server.Shutdown(sctx)
		if b.grpc != nil {
			_ = b.grpc.Shutdown(sctx)
		}
		cancel()
		return fmt.Errorf("broker: %w", err)
	}
	b.started = true
	b.ffStop, b.ffDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(b.ffDone)
		statsDone := make(chan struct{})
		go func() {
			defer close(statsDone)
			b.stats.Run(b.ffStop)
		}()
		b.fastFailure(b.ffStop)
		<-statsDone
	}()
	if b.msg != nil {
		b.msg.start()
	}
	b.startVIP(port)
	b.registrar.Start()
	cfg := b.cfg.Get()
	b.log.Info("broker started", "addr", b.Addr(), "cluster", cfg.BrokerClusterName, "brokerId", cfg.BrokerID,
		"role", cfg.BrokerRole, "namesrv", cfg.NamesrvAddr, "topics", b.topics.Len())
	return nil
}

// Shutdown unregisters from the nameservers, drains in-flight requests
// (until ctx ends) and releases everything. It is safe to call twice.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	started := b.started
	b.mu.Unlock()

	var errs []error
	if err := b.registrar.Shutdown(ctx); err != nil {
		b.log.Warn("unregister from name servers", "err", err)
	}
	if started {
		if b.msg != nil {
			if n := b.msg.pull.DrainHeld(); n > 0 {
				b.log.Info("answered suspended pulls before shutdown", "count", n)
			}
		}
		if b.grpc != nil {
			b.grpcClients.stopAll()
			if err := b.grpc.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
			b.grpcCert.Close()
		}
		if b.vip != nil {
			if err := b.vip.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := b.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		close(b.ffStop)
		<-b.ffDone
	}
	b.closeLocal()
	b.log.Info("broker stopped")
	return errors.Join(errs...)
}

// startGrpc starts the gRPC endpoint of the 5.x clients when
// enableGrpcServer is set (in development, issue 17): grpcServerPort on
// brokerIP1.
func (b *Broker) startGrpc() error {
	cfg := b.cfg.Get()
	if !cfg.EnableGrpcServer {
		return nil
	}
	gtls, err := b.grpcTLS()
	if err != nil {
		return fmt.Errorf("broker: gRPC endpoint: %w", err)
	}
	gcfg := grpcserver.Config{
		Addr:          net.JoinHostPort(cfg.BrokerIP1, strconv.Itoa(cfg.GrpcServerPort)),
		TLS:           gtls,
		EnforceTLS:    b.tls.Settings.Mode() == tlsconfig.ModeEnforcing,
		Hosts:         []string{cfg.BrokerIP1},
		Backend:       grpcBackend{b},
		AdvertiseHost: cfg.BrokerIP1,
		Producers:     b.grpcProducers,
		StreamWorkers: cfg.GrpcStreamWorkers,
		Logger:        b.log.With("component", "grpc"),
	}
	if b.auth != nil && b.auth.Enabled() {
		svc := b.auth
		gcfg.Check = func(md grpcserver.RequestMeta, req proto.Message) error {
			return svc.CheckGRPC(auth.GRPCMeta{Authorization: md.Authorization, DateTime: md.DateTime, RemoteAddr: md.RemoteAddr}, req)
		}
	}
	srv, err := grpcserver.Start(gcfg)
	if err != nil {
		gtls.Close()
		return fmt.Errorf("broker: %w", err)
	}
	b.grpc, b.grpcCert = srv, gtls
	b.grpcLive.Store(srv)
	return nil
}

// grpcTLS is the gRPC endpoint's certificate, watched for changes: the
// proxy's tlsCertPath / tlsKeyPath when set, else tls.server.certPath /
// keyPath, else a self-signed one (the endpoint always serves TLS next to
// h2c, as the proxy does: the 5.x clients use TLS by default). Client
// certificates are not asked for, as the proxy does not ask for them.
func (b *Broker) grpcTLS() (*tlsconfig.Server, error) {
	cfg := b.cfg.Get()
	set := b.tls.Settings
	set.ServerNeedClientAuth, set.ServerAuthClient, set.ServerTrustCertPath = tlsconfig.ClientAuthNone, false, ""
	if cfg.TLSCertPath != "" {
		set.ServerCertPath, set.ServerKeyPath, set.ServerKeyPassword = cfg.TLSCertPath, cfg.TLSKeyPath, ""
	}
	if set.ServerCertPath == "" {
		set.TestModeEnable = true
	}
	srv, err := tlsconfig.NewServer(set, []string{cfg.BrokerIP1}, b.log.With("component", "grpc-tls"))
	if err != nil {
		return nil, err
	}
	srv.Watch(0)
	return srv, nil
}

// GrpcAddr is the gRPC endpoint's listening address, "" when
// enableGrpcServer is off.
func (b *Broker) GrpcAddr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grpc == nil {
		return ""
	}
	return b.grpc.Addr()
}

// closeLocal releases what New built. The processors' workers and timers
// (long polling, pop, transaction checks) exist from New on, so a broker
// that never started releases them too.
func (b *Broker) closeLocal() {
	if b.metrics != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := b.metrics.Shutdown(ctx); err != nil {
			b.log.Warn("stop metrics", "err", err)
		}
		cancel()
	}
	if b.msg != nil {
		b.msg.close()
	}
	for _, ex := range b.pools {
		ex.Close()
	}
	_ = b.client.Close()
	b.tls.Close()
	if b.store != nil {
		if err := b.store.Close(); err != nil {
			b.log.Error("close store", "err", err)
		}
	}
}

// clientConfig is the remoting client configuration of the broker's
// outgoing connections: connectTimeoutMillis and, with tls.enable, TLS.
func (b *Broker) clientConfig() remoting.ClientConfig {
	cfg := b.cfg.Get()
	ccfg := remoting.DefaultClientConfig()
	if cfg.ConnectTimeoutMillis > 0 {
		ccfg.ConnectTimeout = cfg.ConnectTimeoutMillis
	}
	ccfg.TLS = b.tls.ClientTLS()
	return ccfg
}

// storeHost is brokerIP1 with the actual listening port: the store host of
// every record and offset message id.
func (b *Broker) storeHost() netip.AddrPort {
	h, err := storeHost(b.cfg.Get().BrokerIP1, b.Port())
	if err != nil {
		return netip.AddrPort{}
	}
	return h
}

// Store is the message store (nil with WithoutStore).
func (b *Broker) Store() *store.Store { return b.store }

// Addr is the address the broker registers: brokerIP1:port, with the
// actual port once started (listenPort=0 picks a free one).
func (b *Broker) Addr() string { return b.cfg.Get().BrokerAddr(b.Port()) }

// Port is the listening port (the configured one before Start).
func (b *Broker) Port() int {
	if p := b.port.Load(); p > 0 {
		return int(p)
	}
	return b.cfg.Get().ListenPort
}

// Config returns the live configuration (do not modify it).
func (b *Broker) Config() *config.Config { return b.cfg.Get() }

// ConfigHolder gives access to runtime configuration updates.
func (b *Broker) ConfigHolder() *config.Holder { return b.cfg }

// Topics is the topic table.
func (b *Broker) Topics() *topic.Manager { return b.topics }

// Admin is the admin processor (runtime info for the store to extend).
func (b *Broker) Admin() *admin.Processor { return b.admin }

// Lite is the lite-topic service (nil for a broker built WithoutStore).
func (b *Broker) Lite() *lite.Service {
	if b.msg == nil {
		return nil
	}
	return b.msg.lite
}

// MasterAddr is the master's address learned from REGISTER_BROKER answers
// (slaves only; "" otherwise).
func (b *Broker) MasterAddr() string { return b.masterAddr.Load().(string) }

// RegisterProcessor installs a request handler on one of the executors
// (processor.Registrar).
func (b *Broker) RegisterProcessor(c int32, h remoting.Handler, pool processor.Pool) {
	switch c {
	case code.SendMessage, code.SendMessageV2, code.SendBatchMessage, code.ConsumerSendMsgBack:
		h = b.rejectWhileBusy(h)
	}
	b.server.Register(c, b.metricsHandler(c, h), b.pools[poolFor(c, pool)])
}

// WrapProcessor replaces the handler registered for code with wrap(handler),
// keeping its executor. It reports false when nothing is registered.
func (b *Broker) WrapProcessor(code int32, wrap func(remoting.Handler) remoting.Handler) bool {
	h, ex, ok := b.server.Handler(code)
	if !ok {
		return false
	}
	b.server.Register(code, wrap(h), ex)
	return true
}

// Server exposes the remoting server (hooks, connection callbacks).
func (b *Broker) Server() *remoting.Server { return b.server }

// TriggerRegistration asks for a registration round soon (debounced), e.g.
// after a static-topic mapping changed.
func (b *Broker) TriggerRegistration() { b.registrar.Trigger() }

// RegisterNow runs one registration round with every nameserver.
func (b *Broker) RegisterNow(ctx context.Context) []registry.Result {
	return b.registrar.RegisterAll(ctx, true)
}

func (b *Broker) poolStats() map[string]admin.PoolStat {
	out := make(map[string]admin.PoolStat, len(b.pools))
	for _, ex := range b.pools {
		out[ex.Name()] = admin.PoolStat{Queued: ex.QueueLen(), HeadWait: ex.HeadWait()}
	}
	return out
}

// configChanged reacts to UPDATE_BROKER_CONFIG: a new brokerPermission must
// reach the nameservers (Java bumps the topic data version so they rebuild
// the route), autoCreateTopicEnable adds or removes TBW102, and a new
// namesrvAddr takes effect with an immediate registration.
func (b *Broker) configChanged(keys []string) {
	if none := config.NoEffectIn(keys); len(none) > 0 {
		b.log.Warn("accepted with no effect: "+strings.Join(none, ", "), "by", "updateBrokerConfig", "see", "docs/operations.md")
	}
	has := func(k string) bool { return slices.Contains(keys, k) }
	if has("autoCreateTopicEnable") {
		if err := b.topics.EnsureAutoCreateTopic(); err != nil {
			b.log.Error("apply autoCreateTopicEnable", "err", err)
		}
	}
	if has("brokerPermission") {
		if err := b.topics.BumpDataVersion(); err != nil {
			b.log.Error("bump topic data version", "err", err)
		}
	}
	if has("namesrvAddr") || has("brokerPermission") {
		b.registrar.Trigger()
	}
	if has("dataReadAheadEnable") && b.store != nil {
		if err := b.store.CommitLog().SetReadAhead(b.cfg.Get().DataReadAheadEnable); err != nil {
			b.log.Error("apply dataReadAheadEnable", "err", err)
		}
	}
}

// registered handles REGISTER_BROKER answers: the ORDER_TOPIC_CONFIG table
// marks order topics and a slave learns its master (Java's
// handleRegisterBrokerResult uses the first successful answer).
func (b *Broker) registered(results []registry.Result) {
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		if r.MasterAddr != "" || !b.cfg.Get().IsMaster() {
			if old := b.masterAddr.Swap(r.MasterAddr); old != r.MasterAddr && b.slaveSync != nil {
				b.slaveSync.Trigger() // a new master: copy its metadata now
			}
			b.masterHAAddr.Store(r.HAServerAddr)
		}
		if len(r.KVTable) > 0 {
			if err := b.topics.SetOrderTopics(r.KVTable); err != nil {
				b.log.Error("apply order topic config", "err", err)
			}
		}
		return
	}
}

// stateVersion is the topic DataVersion's stateVersion: in controller
// mode the master epoch, so that a nameserver facing two brokers that
// claim route id 0 of one set keeps the newer master (docs/replication.md).
func (b *Broker) stateVersion(store func() int64) func() int64 {
	return func() int64 {
		if n := b.replica.Load(); n != nil {
			return int64(n.ep.LastEpoch())
		}
		if store != nil {
			return store()
		}
		return 0
	}
}

// registrationSource adapts the broker to registry.Source.
type registrationSource struct{ b *Broker }

func (s registrationSource) Identity() registry.Identity {
	cfg := s.b.cfg.Get()
	id := registry.Identity{
		ClusterName:        cfg.BrokerClusterName,
		BrokerName:         cfg.BrokerName,
		BrokerAddr:         s.b.Addr(),
		HAServerAddr:       s.b.haServerAddr(),
		BrokerID:           cfg.BrokerID,
		EnableActingMaster: cfg.EnableSlaveActingMaster,
	}
	if cfg.EnableSlaveActingMaster {
		id.HeartbeatTimeout = cfg.BrokerNotActiveTimeoutMillis
	}
	return id
}

func (s registrationSource) NamesrvAddrs() []string {
	if s.b.fenced() {
		return nil // controller mode: not registered until a role is known
	}
	addrs, err := s.b.cfg.Get().NamesrvAddrs()
	if err != nil {
		s.b.log.Error("bad namesrvAddr", "err", err)
	}
	return addrs
}

// Body is every topic (perms masked by brokerPermission when it lacks READ
// or WRITE, as Java does) plus the static-topic mapping infos.
func (s registrationSource) Body() protocol.RegisterBrokerBody {
	cfg := s.b.cfg.Get()
	table, dv := s.b.topics.Snapshot()
	bp := cfg.BrokerPermission
	if bp&protocol.PermRead == 0 || bp&protocol.PermWrite == 0 {
		for k, tc := range table {
			tc.Perm &= bp
			table[k] = tc
		}
	}
	// In controller mode a registration never carries a stateVersion
	// below this replica's epoch. The table's version may lag it: a round
	// that reads brokerId 0 between "became master" and the version bump,
	// or a copy of the old master's table answered after this broker was
	// elected (its version holds the old epoch). With the old epoch a new
	// master ties with the resumed old one, and a nameserver then gives
	// brokerId 0 to whichever registered last (Apache
	// RouteInfoManager.registerBroker refuses only a smaller
	// stateVersion).
	if sv := s.b.stateVersion(nil)(); sv > dv.StateVersion {
		dv.StateVersion = sv
	}
	details, mdv := s.b.maps.All()
	return protocol.RegisterBrokerBody{
		FilterServerList: []string{},
		TopicConfigSerializeWrapper: protocol.TopicConfigAndMappingSerializeWrapper{
			DataVersion:                dv,
			MappingDataVersion:         mdv,
			TopicConfigTable:           table,
			TopicQueueMappingDetailMap: map[string]protocol.TopicQueueMappingDetail{},
			TopicQueueMappingInfoMap:   mapping.Infos(details),
		},
	}
}

func (s registrationSource) ForceRegister() bool { return s.b.cfg.Get().ForceRegister }

func (s registrationSource) Timeout() time.Duration { return s.b.cfg.Get().RegisterBrokerTimeoutMills }

// sendWorkers sizes the send executor. Java's few send threads hand the
// wait for a SYNC_FLUSH fsync (or a slave ack) to a future and move on; here
// a worker goroutine waits instead, so the pool must be wide enough for many
// sends to share one group commit. sendMessageThreadPoolNums still sets the
// floor.
func sendWorkers(cfg *config.Config) int {
	const minWorkers = 64
	return max(cfg.SendMessageThreadPoolNums, minWorkers)
}
