// Package server assembles a nameserver: configuration, KV store, route
// table, request processor and the remoting listener, plus the scan that
// expires silent brokers. Tests run it in-process on 127.0.0.1:0.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/tlsconfig"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/controller"
	"github.com/rmqgo/rmq/namesrv/kvconfig"
	"github.com/rmqgo/rmq/namesrv/processor"
	"github.com/rmqgo/rmq/namesrv/routeinfo"
)

// Option adjusts a Server.
type Option func(*options)

type options struct {
	clock           func() time.Time
	routeCacheBytes int64
}

// WithClock injects the clock used for broker expiry and the
// wait-for-service window (tests).
func WithClock(clock func() time.Time) Option { return func(o *options) { o.clock = clock } }

// WithRouteCacheBytes bounds the encoded-route cache (0 default, <0 off).
func WithRouteCacheBytes(n int64) Option { return func(o *options) { o.routeCacheBytes = n } }

// Server is one nameserver instance.
type Server struct {
	log        *slog.Logger
	cfg        *nsconfig.Store
	kv         *kvconfig.Store
	routes     *routeinfo.Manager
	proc       *processor.Processor
	remote     *remoting.Server
	ctrlCfg    *controller.Config     // nil unless enableControllerInNamesrv
	ctrl       *controller.Controller // started by Start
	clientExec *remoting.Executor
	tls        *tlsconfig.Setup // nil fields: plaintext

	persistMu sync.Mutex // orders config file writes
	stopScan  chan struct{}
	scanDone  chan struct{}
	stopOnce  sync.Once
	started   atomic.Bool
}

// New builds a nameserver from cfg. Relative paths in cfg are resolved
// against its dataDir (default $HOME/namesrv). Nothing listens until Start.
func New(cfg nsconfig.Config, log *slog.Logger, opts ...Option) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.DataDir == "" || !filepath.IsAbs(cfg.KVConfigPath) || !filepath.IsAbs(cfg.ConfigStorePath) {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		cfg.Resolve(home)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}

	var ctrlCfg *controller.Config
	if cfg.EnableControllerInNamesrv {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		cc := controller.FromNamesrv(&cfg, home)
		if err := cc.Validate(); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		ctrlCfg = &cc
	}

	kv, err := kvconfig.Open(cfg.KVConfigPath, log.With("component", "kvconfig"))
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{
		log:      log,
		cfg:      nsconfig.NewStore(cfg),
		kv:       kv,
		ctrlCfg:  ctrlCfg,
		stopScan: make(chan struct{}),
		scanDone: make(chan struct{}),
	}
	s.routes = routeinfo.New(routeinfo.Options{
		Clock:           o.clock,
		Logger:          log.With("component", "routeinfo"),
		Policy:          policyOf(&cfg),
		RouteCacheBytes: o.routeCacheBytes,
	})
	s.proc = processor.New(processor.Options{
		Config:         s.cfg,
		Routes:         s.routes,
		KV:             kv,
		Logger:         log.With("component", "processor"),
		Clock:          o.clock,
		OnConfigUpdate: s.configUpdated,
	})

	idle := cfg.IdleTimeout()
	if idle == 0 {
		idle = -1 // Apache: 0 disables the idle check
	}
	s.tls, err = tlsconfig.Start(cfg.Settings, nil, log.With("component", "tls"))
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	remote, err := remoting.NewServer(remoting.ServerConfig{
		ListenAddr:  cfg.ListenAddr(),
		IdleTimeout: idle,
		Workers:     cfg.DefaultThreadPoolNums,
		QueueSize:   cfg.DefaultThreadPoolQueueCapacity,
		TLS:         s.tls.Remoting(),
	}, log.With("component", "remoting"))
	if err != nil {
		s.tls.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.remote = remote
	// Route lookups get their own pool so that a burst of client refreshes
	// cannot starve broker registrations, and the other way round (Apache's
	// clientRequestExecutor).
	s.clientExec = remoting.NewExecutor("NSClientRequest", cfg.ClientRequestThreadPoolNums, cfg.ClientRequestThreadPoolQueueCapacity)
	s.clientExec.SetLogger(log)
	for _, c := range s.proc.Codes() {
		var ex *remoting.Executor
		if c == code.GetRouteInfoByTopic {
			ex = s.clientExec
		}
		remote.Register(c, s.proc.Handle, ex)
	}
	remote.OnClose(func(ch *remoting.Channel) {
		if n := s.routes.ConnClosed(ch.ID()); n > 0 {
			log.Info("broker connection closed, brokers unregistered", "remote", ch.RemoteAddr(), "brokers", n)
		}
	})
	return s, nil
}

func policyOf(c *nsconfig.Config) routeinfo.Policy {
	return routeinfo.Policy{
		DeleteTopicWithBrokerRegistration: c.DeleteTopicWithBrokerRegistration,
		SupportActingMaster:               c.SupportActingMaster,
	}
}

// configUpdated applies runtime switches and writes the configuration back
// to configStorePath, as Apache does. A failed write is logged, not
// answered: the update is already in effect.
func (s *Server) configUpdated(next *nsconfig.Config) {
	s.routes.SetPolicy(policyOf(next))
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	if err := nsconfig.Persist(s.cfg.Get()); err != nil {
		s.log.Warn("persist namesrv config failed", "path", next.ConfigStorePath, "err", err)
	}
}

// Start listens and starts the broker expiry scan.
func (s *Server) Start() error {
	if err := s.remote.Start(); err != nil {
		return fmt.Errorf("server: start: %w", err)
	}
	if s.ctrlCfg != nil {
		// The embedded controller serves brokers and tools on its own
		// raft peer address, next to the nameserver port.
		ctrl, err := controller.New(*s.ctrlCfg, controller.Deps{TLS: s.tls}, s.log.With("component", "controller"))
		if err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.remote.Shutdown(ctx)
			return fmt.Errorf("server: start controller: %w", err)
		}
		s.ctrl = ctrl
		s.log.Info("controller started", "addr", ctrl.Addr(), "storePath", s.ctrlCfg.ControllerStorePath)
	}
	s.started.Store(true)
	go s.scanLoop()
	s.log.Info("nameserver started", "addr", s.remote.Addr(), "kvConfigPath", s.kv.Path())
	return nil
}

// Controller is the embedded controller (nil unless
// enableControllerInNamesrv=true and started).
func (s *Server) Controller() *controller.Controller { return s.ctrl }

// scanLoop expires silent brokers every scanNotActiveBrokerInterval, read
// afresh each round so that UPDATE_NAMESRV_CONFIG takes effect.
func (s *Server) scanLoop() {
	defer close(s.scanDone)
	t := time.NewTimer(s.cfg.Get().ScanNotActiveBrokerInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopScan:
			return
		case <-t.C:
			if n := s.routes.ScanNotActive(); n > 0 {
				s.log.Info("expired brokers removed", "count", n)
			}
			t.Reset(s.cfg.Get().ScanNotActiveBrokerInterval)
		}
	}
}

// Addr is the listening "ip:port" ("" before Start).
func (s *Server) Addr() string { return s.remote.Addr() }

// Config returns the current configuration (read-only).
func (s *Server) Config() *nsconfig.Config { return s.cfg.Get() }

// Routes exposes the route table (tests, tools).
func (s *Server) Routes() *routeinfo.Manager { return s.routes }

// KV exposes the KV store (tests, tools).
func (s *Server) KV() *kvconfig.Store { return s.kv }

// Shutdown stops the scan, drains in-flight requests (until ctx ends) and
// closes every connection and worker pool.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stopScan)
		if s.ctrl != nil {
			err = s.ctrl.Close()
		}
		err = errors.Join(err, s.remote.Shutdown(ctx))
		s.clientExec.Close()
		s.tls.Close()
		if s.started.Load() {
			select {
			case <-s.scanDone:
			case <-ctx.Done():
				err = errors.Join(err, ctx.Err())
			}
		}
		s.log.Info("nameserver stopped")
	})
	return err
}
