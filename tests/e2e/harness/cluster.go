package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/tests/framework"
)

// ClusterOptions shape a local cluster of real processes.
type ClusterOptions struct {
	// Namesrvs is the number of nameservers (default 1).
	Namesrvs int
	// Brokers is the number of master brokers (broker-a, broker-b, ...).
	Brokers int
	// ClusterName defaults to DefaultCluster.
	ClusterName string
	// BrokerConf adds properties to every broker.conf (key → value).
	BrokerConf map[string]string
	// NamesrvArgs are extra nameserver flags.
	NamesrvArgs []string
	// BrokerEnv is added to every broker process's environment (KEY=value),
	// for tests that run in parallel and so cannot use t.Setenv.
	BrokerEnv []string
	// BrokerArgs are extra broker flags (e.g. --pprof-addr).
	BrokerArgs []string
	// AdminTLS is the TLS the harness's own admin client uses to wait for
	// registrations (nameservers in TLS enforcing mode); nil: plaintext.
	AdminTLS *tls.Config
}

// BrokerProc is one broker of a Cluster.
type BrokerProc struct {
	Name     string
	ID       int // brokerId
	Props    map[string]string
	Addr     string // 127.0.0.1:port
	Port     int
	ConfPath string
	StoreDir string
	Proc     *Proc
}

// Cluster is nameservers plus brokers started as real processes.
type Cluster struct {
	BinDir string
	// NamesrvAddr is the nameserver list as brokers and mqadmin take it
	// (addresses joined by ";"): the one address of one nameserver.
	NamesrvAddr  string
	NamesrvAddrs []string
	Namesrvs     []*Proc
	Brokers      []*BrokerProc
	opts         ClusterOptions
}

// StartCluster builds the binaries (once per test binary) and starts
// opts.Namesrvs nameservers and opts.Brokers brokers on free loopback
// ports, each with its own temp directory. Everything stops at test
// cleanup.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.ClusterName == "" {
		opts.ClusterName = "DefaultCluster"
	}
	c := &Cluster{BinDir: BuildBinaries(t), opts: opts}
	for i := 0; i < max(opts.Namesrvs, 1); i++ {
		port := LatePort(t) // a test may restart it on this port
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		kv := filepath.Join(t.TempDir(), "kvConfig.json")
		args := append([]string{"--listen-port", fmt.Sprint(port), "--kv-config-path", kv}, opts.NamesrvArgs...)
		name := "namesrv"
		if i > 0 {
			name = fmt.Sprintf("namesrv-%d", i)
		}
		p := StartProcessWith(t, ProcOptions{Name: name}, filepath.Join(c.BinDir, Namesrv), args...)
		p.WaitTCP(t, addr, 20*time.Second)
		c.Namesrvs = append(c.Namesrvs, p)
		c.NamesrvAddrs = append(c.NamesrvAddrs, addr)
	}
	c.NamesrvAddr = strings.Join(c.NamesrvAddrs, ";")
	for i := 0; i < opts.Brokers; i++ {
		c.StartBroker(t, framework.BrokerName(i), nil)
	}
	return c
}

// StartBroker starts one more master broker named name; extra adds
// properties.
func (c *Cluster) StartBroker(t testing.TB, name string, extra map[string]string) *BrokerProc {
	t.Helper()
	return c.StartBrokerID(t, name, 0, extra)
}

// StartBrokerID starts broker name/id (id > 0: a SLAVE); extra adds
// properties after ClusterOptions.BrokerConf.
func (c *Cluster) StartBrokerID(t testing.TB, name string, id int, extra map[string]string) *BrokerProc {
	t.Helper()
	dir := t.TempDir()
	// LatePort: a test may stop the broker and start it again on this
	// port; an ephemeral port may be some connection's source port by then
	// (seen in CI: "bind: address already in use" on a restart).
	port := LatePort(t)
	// The HA port is one of its own (LatePort): listenPort+1, the default,
	// may be taken by then (a flake: "bind: address already in use").
	ha := map[string]string{"haListenPort": strconv.Itoa(LatePort(t))}
	props := framework.BrokerProps(c.opts.ClusterName, name, id, port, c.NamesrvAddr, dir, ha, c.opts.BrokerConf, extra)
	conf := filepath.Join(dir, "broker.conf")
	if err := framework.WriteProps(conf, props); err != nil {
		t.Fatalf("harness: %v", err)
	}
	procName := name
	if id > 0 {
		procName = fmt.Sprintf("%s-%d", name, id)
	}
	bp := &BrokerProc{Name: name, ID: id, Props: props, Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), ConfPath: conf, StoreDir: dir}
	bp.Proc = StartProcessWith(t, ProcOptions{Name: procName, Env: c.opts.BrokerEnv}, filepath.Join(c.BinDir, Broker), append([]string{"-c", conf}, c.opts.BrokerArgs...)...)
	bp.Proc.WaitTCP(t, bp.Addr, 30*time.Second)
	c.waitRegistered(t, bp)
	c.Brokers = append(c.Brokers, bp)
	return bp
}

// waitRegistered waits until every nameserver routes bp: a broker listens
// before its first REGISTER_BROKER completes, and a test that asks the
// nameserver at once (updateTopic -c) would find no such cluster. A
// broker in controller mode registers only once the controller gave it a
// role, so it is not waited for here.
func (c *Cluster) waitRegistered(t testing.TB, bp *BrokerProc) {
	t.Helper()
	if bp.Props["enableControllerMode"] == "true" {
		return
	}
	for _, ns := range c.NamesrvAddrs {
		ac, err := admin.New(admin.Config{NameServers: []string{ns}, TLS: c.opts.AdminTLS}, nil)
		if err != nil {
			t.Fatalf("harness: admin client: %v", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			ci, err := ac.GetBrokerClusterInfo(ctx)
			cancel()
			if err == nil && ci.BrokerAddrTable[bp.Name].BrokerAddrs[int64(bp.ID)] == bp.Addr {
				break
			}
			if time.Now().After(deadline) || bp.Proc.Exited() {
				ac.Close()
				t.Fatalf("harness: %s/%d (%s) not registered at nameserver %s after 30s (last error %v)", bp.Name, bp.ID, bp.Addr, ns, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		ac.Close()
	}
}

// Restart starts a stopped (or killed) broker again with the same
// configuration and store.
func (c *Cluster) Restart(t testing.TB, bp *BrokerProc) {
	t.Helper()
	bp.Proc = StartProcessWith(t, ProcOptions{Name: bp.Proc.Name, Env: c.opts.BrokerEnv}, filepath.Join(c.BinDir, Broker), append([]string{"-c", bp.ConfPath}, c.opts.BrokerArgs...)...)
	bp.Proc.WaitTCP(t, bp.Addr, 30*time.Second)
	c.waitRegistered(t, bp)
}

// MQAdmin runs our mqadmin against the cluster's nameserver.
func (c *Cluster) MQAdmin(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return RunMQAdmin(t, filepath.Join(c.BinDir, MQAdmin), append(args, "-n", c.NamesrvAddr)...)
}

// MQAdminExit runs our mqadmin against the cluster's nameserver; see
// ExecMQAdmin.
func (c *Cluster) MQAdminExit(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return ExecMQAdmin(t, filepath.Join(c.BinDir, MQAdmin), append(args, "-n", c.NamesrvAddr)...)
}

// StartBrokerConf writes props to dir/broker.conf, starts the broker of bin
// with it under name and waits until it listens on 127.0.0.1:port: a broker
// outside any Cluster, for tests that shape its configuration themselves.
func StartBrokerConf(t testing.TB, bin, name, dir string, port int, props map[string]string) *Proc {
	t.Helper()
	conf := filepath.Join(dir, "broker.conf")
	if err := framework.WriteProps(conf, props); err != nil {
		t.Fatal(err)
	}
	p := StartProcessWith(t, ProcOptions{Name: name}, filepath.Join(bin, Broker), "-c", conf)
	p.WaitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 30*time.Second)
	return p
}
