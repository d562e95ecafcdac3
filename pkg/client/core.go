package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// core is what a producer or consumer shares with its background tasks: the
// connections, the route cache, the broker table and the heartbeat/refresh
// loop (Java's MQClientInstance, one per client here).
type core struct {
	cfg      CommonConfig
	log      *slog.Logger
	rc       *remoting.Client
	clientID string
	ns       nameServers

	mu      sync.RWMutex
	routes  map[string]*topicRoute         // topic → latest known route
	brokers map[string]protocol.BrokerData // broker name → addresses

	fetchSem chan struct{} // serializes route fetches so concurrent misses share one

	// heartbeat returns the current heartbeat body, or nil when there is
	// nothing to announce.
	heartbeat func() *heartbeatData

	ctx    context.Context // cancelled by stop: aborts background requests
	cancel context.CancelFunc
	wake   chan struct{} // a new broker appeared: heartbeat now
	done   chan struct{} // closed when loop returns

	lmu     sync.Mutex
	started bool
}

func newCore(cfg CommonConfig, heartbeat func() *heartbeatData) *core {
	instance := cfg.InstanceName
	if instance == "" {
		instance = defaultInstanceName()
	}
	rc := remoting.NewClient(cfg.Remoting, cfg.Logger)
	if cfg.Credentials != nil {
		rc.AddHook(credentials.NewHook(*cfg.Credentials))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &core{
		cfg:       cfg,
		log:       cfg.Logger,
		rc:        rc,
		clientID:  buildClientID(localIP(), instance),
		ns:        nameServers{addrs: cfg.NameServers},
		routes:    make(map[string]*topicRoute),
		brokers:   make(map[string]protocol.BrokerData),
		fetchSem:  make(chan struct{}, 1),
		heartbeat: heartbeat,
		ctx:       ctx,
		cancel:    cancel,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
}

// signRoom is how many extFields the credentials hook adds to a request
// (0 without credentials): headers built for the hot path make room for
// them, so signing does not grow the map.
func (c *core) signRoom() int {
	if c.cfg.Credentials == nil {
		return 0
	}
	return credentials.SignedFields
}

// run starts the background loop once.
// boundTo returns ctx ended also when life ends (the client's or the
// consumer's context), so that a long call stops at shutdown; release frees
// it.
func boundTo(ctx, life context.Context) (_ context.Context, release func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// startLoop starts a client whose background work is the core's loop
// alone (heartbeats and route refreshes): once, moving life to Running.
func (c *core) startLoop(life *lifecycle, kind, group string, log *slog.Logger) error {
	if !life.start() {
		return fmt.Errorf("client: start %s %s: already started or shut down", kind, group)
	}
	c.run()
	log.Info("client: "+kind+" started", "group", group, "clientID", c.clientID)
	return nil
}

// groupClient is what a producer and the pull and simple consumers share:
// the core, the lifecycle and how they start.
type groupClient struct {
	core  *core
	life  lifecycle
	kind  string // "producer", "pull consumer"... in logs and errors
	group string
}

func newGroupClient(cfg CommonConfig, kind, group string, hb func() *heartbeatData) groupClient {
	return groupClient{core: newCore(cfg, hb), kind: kind, group: group}
}

// Start begins the heartbeat and route refresh loop. It does no network I/O.
func (g *groupClient) Start() error {
	return g.core.startLoop(&g.life, g.kind, g.group, g.core.cfg.Logger)
}

// shutdownConsumer is the Shutdown of the pull and simple consumers:
// cancelling the core context ends their long polls, ConsumeLoops and
// Receives at once; then it waits for the calls in flight until ctx ends,
// unregisters the group from the brokers if unregister, and closes the
// connections. errKind names the consumer in the error of the wait.
func (g *groupClient) shutdownConsumer(ctx context.Context, errKind string, unregister bool) error {
	first, idle := g.life.close()
	if !first {
		return nil
	}
	g.core.stop()
	drainErr := drain(ctx, idle)
	if unregister {
		g.core.unregister(ctx, "", g.group)
	}
	return g.core.finishShutdown(g.kind, errKind, g.group, "requests", drainErr)
}

// finishShutdown closes the connections of a kind client of group once
// its calls in flight were waited for, logs that it shut down and returns
// the close error, joined with drainErr, the wait's error, if any ("client:
// <errKind> <group>: waiting for <what>: ...").
func (c *core) finishShutdown(kind, errKind, group, what string, drainErr error) error {
	err := c.close()
	c.cfg.Logger.Info("client: "+kind+" shut down", "group", group)
	if drainErr != nil {
		return errors.Join(fmt.Errorf("client: %s %s: waiting for %s: %w", errKind, group, what, drainErr), err)
	}
	return err
}

func (c *core) run() {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if !c.started && c.ctx.Err() == nil {
		c.started = true
		go c.loop()
	}
}

// loop sends heartbeats (first after at most 1 s, as Java) and refreshes the
// cached routes until stop.
func (c *core) loop() {
	defer close(c.done)
	hb := time.NewTimer(min(time.Second, c.cfg.HeartbeatInterval))
	defer hb.Stop()
	refresh := time.NewTicker(c.cfg.RouteRefreshInterval)
	defer refresh.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-hb.C:
			c.sendHeartbeats(c.ctx)
			hb.Reset(c.cfg.HeartbeatInterval)
		case <-c.wake:
			c.sendHeartbeats(c.ctx)
		case <-refresh.C:
			c.refreshRoutes(c.ctx)
			c.forgetOfflineBrokers()
		}
	}
}

// stop ends the background loop; requests it has in flight are aborted.
func (c *core) stop() {
	c.lmu.Lock()
	c.cancel()
	started := c.started
	c.lmu.Unlock()
	if started {
		<-c.done
	}
}

// wakeHeartbeat asks the loop for a heartbeat now (e.g. a new subscription).
func (c *core) wakeHeartbeat() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close releases the connections; stop must have been called.
func (c *core) close() error {
	if err := c.rc.Close(); err != nil {
		return fmt.Errorf("client: close connections: %w", err)
	}
	return nil
}

// newRequest builds a request in the configured serialization.
func (c *core) newRequest(reqCode int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(reqCode, ext, body)
	req.SerializeType = c.cfg.SerializeType
	return req
}

// invoke sends one request to addr within RequestTimeout (or ctx's shorter
// deadline) and returns the response whatever its code.
func (c *core) invoke(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	return c.invokeCommand(ctx, addr, c.newRequest(reqCode, ext, body))
}

// invokeCommand sends req to addr within RequestTimeout (or ctx's shorter
// deadline) and returns the response whatever its code.
func (c *core) invokeCommand(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("client: request %d to %s: %w", req.Code, addr, err)
	}
	return resp, nil
}

// invokeOK is invoke with any code but SUCCESS turned into *ResponseError.
func (c *core) invokeOK(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	resp, err := c.invoke(ctx, addr, reqCode, ext, body)
	return successOnly(resp, err, addr, reqCode)
}

// successOnly passes on the error of a request reqCode to addr, and turns
// a response whose code is not SUCCESS into *ResponseError.
func successOnly(resp *remoting.Command, err error, addr string, reqCode int32) (*remoting.Command, error) {
	if err != nil {
		return nil, err
	}
	if resp.Code != code.Success {
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: reqCode}
	}
	return resp, nil
}
