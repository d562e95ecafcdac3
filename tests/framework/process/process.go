// Package process is the framework's implementation on real processes:
// the nameserver, broker and mqadmin binaries built by
// tests/e2e/harness (once per test binary, or taken from
// $RMQ_E2E_BIN_DIR), each server with its own log file, stopped with
// SIGTERM and crashed with SIGKILL.
package process

import (
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// Cluster is a harness.Cluster behind framework.Cluster. Harness exposes
// what only processes have (binaries, pids, config files).
type Cluster struct {
	framework.Roster
	*harness.Cluster
}

var _ framework.Cluster = (*Cluster)(nil)

// Start starts a cluster shaped by opts; see framework.Options.
func Start(t testing.TB, opts framework.Options) *Cluster {
	t.Helper()
	opts = opts.Defaults()
	framework.SkipUnless(t, framework.Process, opts, func(framework.Capability) bool { return true })
	hc := harness.StartCluster(t, harness.ClusterOptions{
		Namesrvs:    opts.Namesrvs,
		ClusterName: opts.ClusterName,
		BrokerConf:  opts.BrokerConf,
		BrokerEnv:   append(opts.SystemPropertyEnv(), opts.BrokerEnv...),
		BrokerArgs:  opts.BrokerArgs,
	})
	c := &Cluster{Cluster: hc}
	framework.AddBrokers(t, c, opts)
	return c
}

// Kind is framework.Process.
func (c *Cluster) Kind() framework.Kind { return framework.Process }

// NamesrvAddr is the ";"-joined nameserver list.
func (c *Cluster) NamesrvAddr() string { return c.Cluster.NamesrvAddr }

// NamesrvAddrs lists the nameservers.
func (c *Cluster) NamesrvAddrs() []string { return append([]string(nil), c.Cluster.NamesrvAddrs...) }

// Brokers is every broker in start order.
func (c *Cluster) Brokers() []framework.Broker { return c.Roster.Brokers() }

// AddBroker starts broker name/id.
func (c *Cluster) AddBroker(t testing.TB, name string, id int, conf map[string]string) framework.Broker {
	t.Helper()
	b := &Broker{BrokerProc: c.StartBrokerID(t, name, id, conf), c: c.Cluster}
	c.Add(b)
	return b
}

// MQAdmin runs the mqadmin binary.
func (c *Cluster) MQAdmin(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return c.Cluster.MQAdmin(t, args...)
}

// MQAdminExit runs the mqadmin binary; see framework.Cluster.
func (c *Cluster) MQAdminExit(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return c.Cluster.MQAdminExit(t, args...)
}

// Can: processes can do everything the framework names.
func (c *Cluster) Can(framework.Capability) bool { return true }

// Broker is a broker process.
type Broker struct {
	*harness.BrokerProc
	c *harness.Cluster
}

// Name is brokerName.
func (b *Broker) Name() string { return b.BrokerProc.Name }

// ID is brokerId.
func (b *Broker) ID() int { return b.BrokerProc.ID }

// Addr is 127.0.0.1:port.
func (b *Broker) Addr() string { return b.BrokerProc.Addr }

// StoreDir is storePathRootDir.
func (b *Broker) StoreDir() string { return b.BrokerProc.StoreDir }

// Conf copies the properties of its broker.conf.
func (b *Broker) Conf() map[string]string {
	out := make(map[string]string, len(b.Props))
	for k, v := range b.Props {
		out[k] = v
	}
	return out
}

// Stop sends SIGTERM (SIGKILL after harness.StopTimeout).
func (b *Broker) Stop() error { return b.Proc.Stop() }

// Start runs the binary again on the same broker.conf.
func (b *Broker) Start(t testing.TB) {
	t.Helper()
	b.c.Restart(t, b.BrokerProc)
}

// Restart is Stop then Start.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.Stop(); err != nil {
		t.Fatalf("process: stop %s: %v", b.Proc.Name, err)
	}
	b.Start(t)
}

// Kill sends SIGKILL and waits for the process to be gone.
func (b *Broker) Kill(testing.TB) { b.Proc.Kill() }

// Running reports whether the process is alive.
func (b *Broker) Running() bool { return !b.Proc.Exited() }

// Logs is the process's output.
func (b *Broker) Logs() string { return b.Proc.Logs() }

// Reconfigure rewrites broker.conf with set applied (next Start).
func (b *Broker) Reconfigure(t testing.TB, set map[string]string) {
	t.Helper()
	framework.MergeProps(b.Props, set)
	if err := framework.WriteProps(b.ConfPath, b.Props); err != nil {
		t.Fatal(err)
	}
}
