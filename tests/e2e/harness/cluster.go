package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ClusterOptions shape a local cluster of real processes.
type ClusterOptions struct {
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
}

// BrokerProc is one broker of a Cluster.
type BrokerProc struct {
	Name     string
	Addr     string // 127.0.0.1:port
	Port     int
	ConfPath string
	StoreDir string
	Proc     *Proc
}

// Cluster is a nameserver plus brokers started as real processes.
type Cluster struct {
	BinDir      string
	NamesrvAddr string
	Namesrv     *Proc
	Brokers     []*BrokerProc
	opts        ClusterOptions
}

// StartCluster builds the binaries (once per test binary) and starts a
// nameserver and opts.Brokers brokers on free loopback ports, each with its
// own temp directory. Everything stops at test cleanup.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.ClusterName == "" {
		opts.ClusterName = "DefaultCluster"
	}
	c := &Cluster{BinDir: BuildBinaries(t), opts: opts}
	port := FreePort(t)
	c.NamesrvAddr = fmt.Sprintf("127.0.0.1:%d", port)
	kv := filepath.Join(t.TempDir(), "kvConfig.json")
	args := append([]string{"--listen-port", fmt.Sprint(port), "--kv-config-path", kv}, opts.NamesrvArgs...)
	c.Namesrv = StartProcessWith(t, ProcOptions{Name: "namesrv"}, filepath.Join(c.BinDir, Namesrv), args...)
	c.Namesrv.WaitTCP(t, c.NamesrvAddr, 20*time.Second)
	for i := 0; i < opts.Brokers; i++ {
		c.StartBroker(t, "broker-"+string(rune('a'+i)), nil)
	}
	return c
}

// StartBroker starts one more broker named name; extra adds properties.
func (c *Cluster) StartBroker(t testing.TB, name string, extra map[string]string) *BrokerProc {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	props := map[string]string{
		"brokerClusterName":       c.opts.ClusterName,
		"brokerName":              name,
		"brokerId":                "0",
		"brokerIP1":               "127.0.0.1",
		"brokerIP2":               "127.0.0.1",
		"listenPort":              fmt.Sprint(port),
		"namesrvAddr":             c.NamesrvAddr,
		"storePathRootDir":        dir,
		"mappedFileSizeCommitLog": fmt.Sprint(64 << 20),
	}
	for k, v := range c.opts.BrokerConf {
		props[k] = v
	}
	for k, v := range extra {
		props[k] = v
	}
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	conf := filepath.Join(dir, "broker.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("harness: %v", err)
	}
	bp := &BrokerProc{Name: name, Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), ConfPath: conf, StoreDir: dir}
	bp.Proc = StartProcessWith(t, ProcOptions{Name: name, Env: c.opts.BrokerEnv}, filepath.Join(c.BinDir, Broker), append([]string{"-c", conf}, c.opts.BrokerArgs...)...)
	bp.Proc.WaitTCP(t, bp.Addr, 30*time.Second)
	c.Brokers = append(c.Brokers, bp)
	return bp
}

// Restart starts a stopped (or killed) broker again with the same
// configuration and store.
func (c *Cluster) Restart(t testing.TB, bp *BrokerProc) {
	t.Helper()
	bp.Proc = StartProcessWith(t, ProcOptions{Name: bp.Name, Env: c.opts.BrokerEnv}, filepath.Join(c.BinDir, Broker), append([]string{"-c", bp.ConfPath}, c.opts.BrokerArgs...)...)
	bp.Proc.WaitTCP(t, bp.Addr, 30*time.Second)
}

// MQAdmin runs our mqadmin against the cluster's nameserver.
func (c *Cluster) MQAdmin(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return RunMQAdmin(t, filepath.Join(c.BinDir, MQAdmin), append(args, "-n", c.NamesrvAddr)...)
}

// Eventually retries f until it returns nil or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := f()
		if err == nil {
			if d := time.Since(start); d > 5*time.Second {
				// Slow waits are where a suite's time goes: say so.
				t.Logf("harness: condition met after %v", d.Round(100*time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
