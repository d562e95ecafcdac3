// Package inproc is the framework's implementation inside the test
// process: nameservers (namesrv/server) and brokers (broker.New) with real
// remoting on loopback ports and stores in temp directories, and mqadmin
// run as its command package. Nothing is built or forked, so a cluster
// starts in milliseconds and the race detector sees the servers too.
//
// Each server logs (slog text, info) to its own file in the test's temp
// directory; a failed test gets their tails. A broker's configuration goes
// through the same broker.conf file and config.Load the binary uses.
package inproc

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/mqadmin/command"
	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/server"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// Timeouts of the in-process cluster.
const (
	// StopTimeout bounds a broker's graceful shutdown (the binary's
	// harness waits as long after SIGTERM).
	StopTimeout = 15 * time.Second
	// MQAdminTimeout bounds one MQAdmin call, as for the binary.
	MQAdminTimeout = harness.MQAdminTimeout
	// logTailBytes is how much of a server log a failed test shows.
	logTailBytes = 64 << 10
)

// Cluster runs in the test process.
type Cluster struct {
	framework.Roster
	opts     framework.Options
	namesrvs []*server.Server
	addrs    []string
}

var _ framework.Cluster = (*Cluster)(nil)

// Start starts a cluster shaped by opts; see framework.Options. Tests
// that need a capability this implementation lacks are skipped.
func Start(t testing.TB, opts framework.Options) *Cluster {
	t.Helper()
	opts = opts.Defaults()
	c := &Cluster{opts: opts}
	framework.SkipUnless(t, framework.InProcess, opts, c.Can)
	for i := 0; i < opts.Namesrvs; i++ {
		c.startNamesrv(t, i)
	}
	framework.AddBrokers(t, c, opts)
	return c
}

func (c *Cluster) startNamesrv(t testing.TB, i int) {
	t.Helper()
	dir := t.TempDir()
	name := "namesrv"
	if i > 0 {
		name = fmt.Sprintf("namesrv-%d", i)
	}
	log := newServerLog(t, name)
	cfg, _, err := nsconfig.Load(nsconfig.Source{Overrides: map[string]string{
		"listenPort":   "0",
		"bindAddress":  "127.0.0.1",
		"kvConfigPath": filepath.Join(dir, "kvConfig.json"),
	}}, dir)
	if err != nil {
		t.Fatalf("inproc: %s config: %v", name, err)
	}
	srv, err := server.New(cfg, log.logger)
	if err != nil {
		t.Fatalf("inproc: %s: %v", name, err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("inproc: start %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Logf("inproc: stop %s: %v", name, err)
		}
	})
	c.namesrvs = append(c.namesrvs, srv)
	c.addrs = append(c.addrs, loopback(srv.Addr()))
}

// loopback turns a listener address (0.0.0.0:p or 127.0.0.1:p) into the
// address to dial.
func loopback(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// Namesrv is the i-th nameserver, for tests that look inside.
func (c *Cluster) Namesrv(i int) *server.Server { return c.namesrvs[i] }

// Kind is framework.InProcess.
func (c *Cluster) Kind() framework.Kind { return framework.InProcess }

// NamesrvAddr is the ";"-joined nameserver list.
func (c *Cluster) NamesrvAddr() string { return strings.Join(c.addrs, ";") }

// NamesrvAddrs lists the nameservers.
func (c *Cluster) NamesrvAddrs() []string { return append([]string(nil), c.addrs...) }

// Can: no crash, no per-broker environment or flags (see the
// capabilities' documentation).
func (c *Cluster) Can(framework.Capability) bool { return false }

// AddBroker starts broker name/id in the test process.
func (c *Cluster) AddBroker(t testing.TB, name string, id int, conf map[string]string) framework.Broker {
	t.Helper()
	dir := t.TempDir()
	var port int // restarts rebind it (see harness.LatePort)
	if c.opts.BrokerConf["vipChannelListenEnable"] == "true" || conf["vipChannelListenEnable"] == "true" {
		port = harness.LatePortWithVIP(t) // listenPort − 2 is listened on too
	} else {
		port = harness.LatePort(t)
	}
	// The HA port is one of its own (LatePort): listenPort+1, the default,
	// may be taken by then.
	ha := map[string]string{"haListenPort": strconv.Itoa(harness.LatePort(t))}
	props := framework.BrokerProps(c.opts.ClusterName, name, id, port, c.NamesrvAddr(), dir, ha, c.opts.BrokerConf, conf)
	confPath := filepath.Join(dir, "broker.conf")
	if err := framework.WriteProps(confPath, props); err != nil {
		t.Fatal(err)
	}
	label := name
	if id > 0 {
		label = fmt.Sprintf("%s-%d", name, id)
	}
	b := &Broker{c: c, name: name, id: id, props: props, confPath: confPath, dir: dir, label: label,
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), log: newServerLog(t, label)}
	b.Start(t)
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Logf("inproc: stop %s: %v", label, err)
		}
	})
	c.Add(b)
	return b
}

// MQAdmin runs the mqadmin command package with args plus -n.
func (c *Cluster) MQAdmin(t testing.TB, args ...string) (string, error) {
	t.Helper()
	stdout, stderr, code := c.MQAdminExit(t, args...)
	if stderr != "" {
		t.Logf("inproc: mqadmin %s: stderr:\n%s", strings.Join(args, " "), stderr)
	}
	if code != command.ExitOK {
		return stdout, fmt.Errorf("mqadmin %s: exit status %d; stderr: %s", strings.Join(args, " "), code, strings.TrimSpace(stderr))
	}
	return stdout, nil
}

// MQAdminExit runs the mqadmin command package: what the binary would
// print and its exit code.
func (c *Cluster) MQAdminExit(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	args = append(append([]string(nil), args...), "-n", c.NamesrvAddr())
	ctx, cancel := context.WithTimeout(context.Background(), MQAdminTimeout)
	defer cancel()
	var out, errb bytes.Buffer
	code = command.Main(ctx, args, command.Env{
		Stdout: &out, Stderr: &errb,
		// Nothing from the test's environment (NAMESRV_ADDR): -n decides.
		Getenv:     func(string) string { return "" },
		MsgBodyDir: t.TempDir(),
	})
	return out.String(), errb.String(), code
}

// Broker is a broker.Broker in the test process.
type Broker struct {
	c             *Cluster
	name, label   string
	id            int
	props         map[string]string
	confPath, dir string
	addr          string
	log           *serverLog

	mu sync.Mutex
	b  *broker.Broker // nil while stopped
}

// Name is brokerName.
func (b *Broker) Name() string { return b.name }

// ID is brokerId.
func (b *Broker) ID() int { return b.id }

// Addr is 127.0.0.1:listenPort.
func (b *Broker) Addr() string { return b.addr }

// StoreDir is storePathRootDir.
func (b *Broker) StoreDir() string { return b.dir }

// Conf copies the properties of its broker.conf.
func (b *Broker) Conf() map[string]string {
	out := make(map[string]string, len(b.props))
	for k, v := range b.props {
		out[k] = v
	}
	return out
}

// Start loads broker.conf as the binary does (file, runtime overlay) and
// starts the broker.
func (b *Broker) Start(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b != nil {
		t.Fatalf("inproc: %s is already running", b.label)
	}
	loaded, err := config.Load(config.Source{
		File:    b.confPath,
		Derived: map[string]string{"brokerConfigPath": b.confPath},
		Host:    config.Host{Hostname: b.name, IP: "127.0.0.1", Home: b.dir, Env: map[string]string{}},
	})
	if err != nil {
		t.Fatalf("inproc: %s config: %v", b.label, err)
	}
	for _, k := range loaded.Unknown {
		// As the binary does: a warning in the broker's log.
		b.log.logger.Warn("unknown config key ignored", "key", k)
	}
	if len(loaded.NoEffect) > 0 {
		b.log.logger.Warn("accepted with no effect: " + strings.Join(loaded.NoEffect, ", "))
	}
	var opts []broker.Option
	if d := b.c.opts.LockMaxLiveTime; d > 0 {
		opts = append(opts, broker.WithLockMaxLiveTime(d))
	}
	if d := b.c.opts.LiteExpirationUnit; d > 0 {
		opts = append(opts, broker.WithLiteExpirationUnit(d))
	}
	br, err := broker.New(loaded.Config, b.log.logger, opts...)
	if err != nil {
		t.Fatalf("inproc: %s: %v", b.label, err)
	}
	if err := br.Start(); err != nil {
		_ = br.Shutdown(context.Background())
		t.Fatalf("inproc: start %s: %v", b.label, err)
	}
	b.b = br
}

// Stop shuts the broker down as the binary does on SIGTERM.
func (b *Broker) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	err := b.b.Shutdown(ctx)
	b.b = nil
	if err != nil {
		return fmt.Errorf("inproc: shutdown %s: %w", b.label, err)
	}
	return nil
}

// Restart is Stop then Start.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	b.Start(t)
}

// Kill fails t: see framework.Crash. Tests that crash brokers list Crash
// in Options.Needs and are skipped here before they start.
func (b *Broker) Kill(t testing.TB) {
	t.Helper()
	t.Fatalf("inproc: cannot kill -9 %s in the test process; the test must list framework.Crash in Options.Needs", b.label)
}

// Running reports whether the broker is started.
func (b *Broker) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b != nil
}

// Logs is everything the broker logged, across restarts.
func (b *Broker) Logs() string { return b.log.String() }

// Reconfigure rewrites broker.conf with set applied (next Start).
func (b *Broker) Reconfigure(t testing.TB, set map[string]string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	framework.MergeProps(b.props, set)
	if err := framework.WriteProps(b.confPath, b.props); err != nil {
		t.Fatal(err)
	}
}

// Server is the running broker (nil while stopped), for tests that look
// inside.
func (b *Broker) Server() *broker.Broker {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b
}

// serverLog is one server's log file; a failed test gets its tail.
type serverLog struct {
	path   string
	logger *slog.Logger
}

func newServerLog(t testing.TB, name string) *serverLog {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		t.Fatalf("inproc: %v", err)
	}
	l := &serverLog{path: f.Name(), logger: slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	// Registered before the server's own cleanup, so it runs after it and
	// the tail includes the shutdown.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("inproc: ----- %s log (%s) -----\n%s----- end of %s log -----", name, l.path, framework.FileTail(l.path, logTailBytes), name)
		}
		f.Close()
	})
	return l
}

func (l *serverLog) String() string {
	b, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Sprintf("<cannot read %s: %v>", l.path, err)
	}
	return string(b)
}
