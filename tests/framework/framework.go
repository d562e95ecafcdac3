// Package framework is the one way end-to-end tests get a cluster: a
// Cluster of nameservers and brokers behind an interface, with two
// implementations. tests/framework/process runs the real binaries (what
// users run; kill -9 is a real SIGKILL); tests/framework/inproc runs the
// same servers inside the test process (nameserver server.New, broker.New,
// real remoting on loopback ports): fast, and it works under -race.
//
// A test is written once against Cluster and Broker and runs on either;
// the test package picks the implementation per run (tests/e2e: the
// -cluster flag). What only one implementation can do is a Capability:
// a test that needs one lists it in Options.Needs and is skipped, with the
// reason, where it is missing.
package framework

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
)

// Kind names an implementation.
type Kind string

// The implementations.
const (
	Process   Kind = "process"
	InProcess Kind = "inproc"
)

// ParseKind checks a -cluster value.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Process, InProcess:
		return k, nil
	}
	return "", fmt.Errorf("unknown cluster kind %q: want %q or %q", s, Process, InProcess)
}

// Capability is something only some implementations can do.
type Capability string

const (
	// Crash: Broker.Kill is a real crash (SIGKILL: no shutdown code runs,
	// Pebble's memtable and every unflushed in-memory state are lost). In
	// one process the broker's goroutines, open files and Pebble's
	// directory lock cannot be dropped without running its shutdown, so
	// only real processes have it.
	Crash Capability = "kill -9 of a broker"
	// BrokerEnv: Options.BrokerEnv reaches the brokers (each process has
	// its own environment; brokers in the test process would share it).
	BrokerEnv Capability = "per-broker environment variables"
	// BrokerArgs: Options.BrokerArgs (command-line flags of the binary).
	BrokerArgs Capability = "broker command-line flags"
)

// The environment variables the broker binary turns into broker options
// (broker/cmd/broker), in milliseconds.
const (
	EnvLockMaxLiveTime    = "ROCKETMQ_BROKER_REBALANCE_LOCKMAXLIVETIME"
	EnvLiteExpirationUnit = "ROCKETMQ_LITE_TOPIC_EXPIRATION_UNIT_MS"
)

// SlaveRole is the brokerRole of brokerId > 0.
const SlaveRole = "SLAVE"

// DefaultCluster is the cluster name unless Options says otherwise.
const DefaultCluster = "DefaultCluster"

// Options shape a cluster.
type Options struct {
	// Namesrvs is the number of nameservers (default 1). They are
	// independent, as RocketMQ's are; every broker registers with all.
	Namesrvs int
	// Brokers is the number of broker names: broker-a, broker-b, ...
	Brokers int
	// Replicas is the number of brokers per name (default 1): brokerId 0
	// is the master, brokerId 1.. are slaves with brokerRole SLAVE.
	Replicas int
	// ClusterName defaults to DefaultCluster.
	ClusterName string
	// BrokerConf adds properties to every broker (key → value).
	BrokerConf map[string]string
	// PerBroker, when set, adds properties to one broker (after
	// BrokerConf); it may return nil.
	PerBroker func(name string, id int) map[string]string
	// LockMaxLiveTime (rocketmq.broker.rebalance.lockMaxLiveTime, the
	// orderly lock expiry) and LiteExpirationUnit (the unit of the
	// lite.topic.expiration attribute) are Java system properties, not
	// broker.conf keys: the binary reads them from its environment
	// (EnvLockMaxLiveTime, EnvLiteExpirationUnit), an in-process broker
	// takes them as options. Zero keeps the default.
	LockMaxLiveTime    time.Duration
	LiteExpirationUnit time.Duration
	// BrokerEnv is added to every broker's environment (KEY=value); needs
	// BrokerEnv.
	BrokerEnv []string
	// BrokerArgs are extra broker flags; needs BrokerArgs.
	BrokerArgs []string
	// Needs lists what the test needs beyond what every implementation
	// does: without it the test is skipped (and says why).
	Needs []Capability
}

// Defaults fills in the zero values.
func (o Options) Defaults() Options {
	if o.Namesrvs <= 0 {
		o.Namesrvs = 1
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.ClusterName == "" {
		o.ClusterName = DefaultCluster
	}
	return o
}

// SystemPropertyEnv is LockMaxLiveTime and LiteExpirationUnit as the
// binary's environment entries.
func (o Options) SystemPropertyEnv() []string {
	var env []string
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{EnvLockMaxLiveTime, o.LockMaxLiveTime}, {EnvLiteExpirationUnit, o.LiteExpirationUnit}} {
		if p.d > 0 {
			env = append(env, fmt.Sprintf("%s=%d", p.name, p.d.Milliseconds()))
		}
	}
	return env
}

// Needed returns the capabilities o requires, Needs plus what its fields
// imply.
func (o Options) Needed() []Capability {
	caps := append([]Capability(nil), o.Needs...)
	if len(o.BrokerEnv) > 0 {
		caps = append(caps, BrokerEnv)
	}
	if len(o.BrokerArgs) > 0 {
		caps = append(caps, BrokerArgs)
	}
	return caps
}

// SkipUnless skips t when an implementation of kind, which can do what
// has says, lacks one of the capabilities o needs. Implementations call it
// before starting anything.
func SkipUnless(t testing.TB, kind Kind, o Options, has func(Capability) bool) {
	t.Helper()
	for _, c := range o.Needed() {
		if !has(c) {
			t.Skipf("needs real processes (-cluster=%s): the %s cluster cannot do %s", Process, kind, c)
		}
	}
}

// Require skips t (a test or subtest of a running cluster) unless c has
// every capability in caps.
func Require(t testing.TB, c Cluster, caps ...Capability) {
	t.Helper()
	SkipUnless(t, c.Kind(), Options{Needs: caps}, c.Can)
}

// BrokerName is the name of the i-th broker name of a cluster.
func BrokerName(i int) string { return "broker-" + string(rune('a'+i)) }

// Cluster is a running cluster.
type Cluster interface {
	Kind() Kind
	// NamesrvAddr is the nameserver list as RocketMQ writes it
	// ("host:port;host:port"): one address for one nameserver.
	NamesrvAddr() string
	NamesrvAddrs() []string
	// Brokers are every broker, in start order (broker-a's master, its
	// slaves, broker-b's master, ...; then those added later).
	Brokers() []Broker
	// Masters are the brokerId 0 brokers, one per name, in name order.
	Masters() []Broker
	// Set is the brokers named name, by brokerId.
	Set(name string) []Broker
	// AddBroker starts one more broker (brokerId > 0 makes it a SLAVE);
	// conf adds properties after Options.BrokerConf.
	AddBroker(t testing.TB, name string, id int, conf map[string]string) Broker
	// MQAdmin runs our mqadmin with args plus -n NamesrvAddr and returns
	// its stdout; err (non-zero exit, with stderr) as the binary's.
	MQAdmin(t testing.TB, args ...string) (string, error)
	// MQAdminExit is MQAdmin for tests of the tool's failures: stdout,
	// stderr and the exit code; a run that cannot happen fails t.
	MQAdminExit(t testing.TB, args ...string) (stdout, stderr string, code int)
	// Can reports whether this implementation has c.
	Can(c Capability) bool
}

// Broker is one broker of a Cluster. Everything stops at test cleanup,
// and on failure the test log gets each server's log tail.
type Broker interface {
	Name() string
	ID() int
	// Addr is 127.0.0.1:port; it stays the same across restarts.
	Addr() string
	// StoreDir is storePathRootDir.
	StoreDir() string
	// Conf is a copy of the properties it was started with.
	Conf() map[string]string
	// Stop shuts it down gracefully (as SIGTERM does), keeping its store.
	Stop() error
	// Start starts a stopped or killed broker again, same configuration
	// and store, and waits until it accepts connections.
	Start(t testing.TB)
	// Restart is Stop then Start; a failed stop fails t.
	Restart(t testing.TB)
	// Kill crashes it (needs Crash; fails t elsewhere).
	Kill(t testing.TB)
	// Running reports whether it is up (false after Stop, Kill, or a
	// process that exited on its own).
	Running() bool
	// Logs is everything it logged since the cluster started.
	Logs() string
	// Reconfigure sets properties in its broker.conf (an empty value
	// removes the key); they take effect at its next Start, as an
	// operator's edit does.
	Reconfigure(t testing.TB, set map[string]string)
}

// MergeProps applies set to props: an empty value removes the key.
func MergeProps(props, set map[string]string) {
	for k, v := range set {
		if v == "" {
			delete(props, k)
		} else {
			props[k] = v
		}
	}
}

// BrokerProps are the properties of broker name/id listening on port:
// loopback addresses only, its own store under storeDir, 64 MiB CommitLog
// segments (tests write little), brokerRole SLAVE for id > 0; then the
// layers, later ones winning.
func BrokerProps(cluster, name string, id, port int, namesrv, storeDir string, layers ...map[string]string) map[string]string {
	props := map[string]string{
		"brokerClusterName":       cluster,
		"brokerName":              name,
		"brokerId":                strconv.Itoa(id),
		"brokerIP1":               "127.0.0.1",
		"brokerIP2":               "127.0.0.1",
		"bindAddress":             "127.0.0.1",
		"listenPort":              strconv.Itoa(port),
		"namesrvAddr":             namesrv,
		"storePathRootDir":        storeDir,
		"mappedFileSizeCommitLog": strconv.Itoa(64 << 20),
		// No listener on listenPort − 2 (Apache's VIP port): another
		// test's broker may have been handed that port and start later.
		// Tests of the VIP port turn it on.
		"vipChannelListenEnable": "false",
	}
	if id > 0 {
		props["brokerRole"] = SlaveRole
	}
	for _, l := range layers {
		for k, v := range l {
			props[k] = v
		}
	}
	return props
}

// WriteProps writes props as a properties file (broker.conf).
func WriteProps(path string, props map[string]string) error {
	if err := os.WriteFile(path, []byte(admin.FormatProperties(props)), 0o644); err != nil {
		return fmt.Errorf("framework: write %s: %w", path, err)
	}
	return nil
}

// Slot is one broker of a cluster's layout.
type Slot struct {
	Name string
	ID   int
}

// Slots is the start order of o's brokers: name-major, brokerId
// ascending, so each master is up before its slaves.
func (o Options) Slots() []Slot {
	var out []Slot
	for i := 0; i < o.Brokers; i++ {
		for id := 0; id < o.Replicas; id++ {
			out = append(out, Slot{BrokerName(i), id})
		}
	}
	return out
}

// AddBrokers starts o's brokers on c, in Slots order, each with its
// PerBroker properties.
func AddBrokers(t testing.TB, c Cluster, o Options) {
	t.Helper()
	for _, s := range o.Slots() {
		var extra map[string]string
		if o.PerBroker != nil {
			extra = o.PerBroker(s.Name, s.ID)
		}
		c.AddBroker(t, s.Name, s.ID, extra)
	}
}

// Roster keeps a cluster's brokers in start order; implementations embed
// it for Brokers, Masters and Set.
type Roster struct {
	mu   sync.Mutex
	list []Broker
}

// Add appends b.
func (r *Roster) Add(b Broker) {
	r.mu.Lock()
	r.list = append(r.list, b)
	r.mu.Unlock()
}

// Brokers is every broker, in start order.
func (r *Roster) Brokers() []Broker {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Broker(nil), r.list...)
}

// Masters are the brokerId 0 brokers in name order.
func (r *Roster) Masters() []Broker {
	var out []Broker
	for _, b := range r.Brokers() {
		if b.ID() == 0 {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Set is the brokers named name, by brokerId.
func (r *Roster) Set(name string) []Broker {
	var out []Broker
	for _, b := range r.Brokers() {
		if b.Name() == name {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// FileTail is the last n bytes of a log file (saying what it left out),
// ending in a newline.
func FileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("<cannot read %s: %v>\n", path, err)
	}
	defer f.Close()
	prefix := ""
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		f.Seek(fi.Size()-n, io.SeekStart)
		prefix = fmt.Sprintf("<... first %d bytes omitted ...>\n", fi.Size()-n)
	}
	b, _ := io.ReadAll(f)
	s := prefix + string(b)
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}
