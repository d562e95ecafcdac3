// Package config is the broker's configuration: Apache RocketMQ's
// BrokerConfig, NettyServerConfig/NettyClientConfig, MessageStoreConfig and
// AuthConfig keys with Java's defaults, loaded from a broker.conf properties
// file, the environment and command-line overrides.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	pcfg "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
)

// EnvPrefix maps key listenPort to environment variable BROKER_LISTEN_PORT.
const EnvPrefix = "BROKER"

// OverlayFileName is the file under <storePathRootDir>/config that keeps keys
// changed at runtime by UPDATE_BROKER_CONFIG (Java rewrites its config file,
// by default $HOME/store/config/broker.properties; we keep the user's file
// untouched and layer this one over it at boot).
const OverlayFileName = "broker.properties"

// Config is the complete broker configuration. The embedded structs make
// every key addressable by pkg/config; fields are plain values so a Config
// can be copied by assignment.
type Config struct {
	BrokerConfig
	NettyConfig
	MessageStoreConfig
	AuthConfig
	// Apache's tls.* keys (pkg/tlsconfig): the remoting, HA and gRPC
	// ports take tls.server.*, the broker's own outgoing connections
	// (nameserver, other brokers, HA master, controller) tls.enable and
	// tls.client.*.
	tlsconfig.Settings
}

// Host describes the machine for the defaults that Java computes from it.
type Host struct {
	Hostname string            // default brokerName
	IP       string            // default brokerIP1/brokerIP2
	Home     string            // $HOME: storePathRootDir defaults to $HOME/store
	Env      map[string]string // NAMESRV_ADDR, ROCKETMQ_HOME
}

// LocalHost inspects the running machine. Env is left empty: main passes
// the process environment in.
func LocalHost() Host {
	h := Host{Env: map[string]string{}}
	h.Hostname, _ = os.Hostname()
	h.IP = LocalIPv4()
	h.Home, _ = os.UserHomeDir()
	return h
}

// Default returns Java's defaults for the given host.
func Default(h Host) *Config {
	return &Config{
		BrokerConfig:       defaultBrokerConfig(h.Hostname, h.IP, h.Env),
		NettyConfig:        defaultNettyConfig(),
		MessageStoreConfig: defaultMessageStoreConfig(h.Home),
		AuthConfig:         defaultAuthConfig(),
		Settings:           tlsconfig.Defaults(),
	}
}

// Clone returns an independent copy.
func (c *Config) Clone() *Config {
	cp := *c
	return &cp
}

// Source says where to load from; the precedence, lowest first, is: Java
// defaults (including env NAMESRV_ADDR), File, environment BROKER_*, the
// runtime overlay <storePathRootDir>/config/broker.properties, Overrides.
type Source struct {
	File      string
	Environ   []string          // os.Environ() form; nil means none
	Overrides map[string]string // command-line flags
	Host      Host
	// NoOverlay skips the runtime overlay (tests, `broker -p`).
	NoOverlay bool
	// Derived are settings the program derives itself (brokerConfigPath
	// from -c): applied after everything else but not counted as set by the
	// user (Loaded.NoEffect).
	Derived map[string]string
}

// Loaded is the result of Load.
type Loaded struct {
	Config *Config
	// Unknown lists keys that match no setting, as written by the user.
	Unknown []string
	// Legacy lists RocketMQ 4.x keys that 5.x ignores.
	Legacy []string
	// Warnings are suspicious but accepted settings.
	Warnings []string
	// OverlayKeys are the keys restored from the runtime overlay.
	OverlayKeys []string
	// NoEffect lists the keys marked `effect:"none"` that the file, the
	// environment, the overlay or the command line set (canonical
	// spelling, sorted): the broker warns about them at start.
	NoEffect []string
}

// Load reads the configuration, derives Java's computed defaults (Finalize)
// and validates it.
func Load(src Source) (*Loaded, error) {
	first, set, unknown, err := load(src, nil)
	if err != nil {
		return nil, err
	}
	res := &Loaded{Config: first}
	var overlay map[string]string
	if !src.NoOverlay {
		path := OverlayPath(first)
		if filepath.Clean(path) != filepath.Clean(src.File) || src.File == "" {
			overlay, err = ReadOverlay(path)
			if err != nil {
				return nil, err
			}
		}
	}
	if len(overlay) > 0 {
		merged := make(map[string]string, len(overlay)+len(src.Overrides))
		for k, v := range overlay {
			merged[k] = v
			res.OverlayKeys = append(res.OverlayKeys, k)
		}
		sort.Strings(res.OverlayKeys)
		for k, v := range src.Overrides {
			merged[k] = v
		}
		src.Overrides = merged
		res.Config, set, unknown, err = load(src, overlay)
		if err != nil {
			return nil, err
		}
	}
	for _, k := range unknown {
		if legacyKey(k) {
			res.Legacy = append(res.Legacy, k)
		} else {
			res.Unknown = append(res.Unknown, k)
		}
	}
	res.NoEffect = pcfg.NoEffectSet(res.Config, set)
	res.Config.Finalize()
	if err := res.Config.Validate(); err != nil {
		return nil, err
	}
	res.Warnings = res.Config.Warnings()
	return res, nil
}

// load applies src over the defaults; set are the keys the user set.
func load(src Source, overlay map[string]string) (cfg *Config, set, unknown []string, err error) {
	cfg = Default(src.Host)
	set, unknownLower, err := pcfg.LoadSet(cfg, pcfg.Source{
		File:      src.File,
		EnvPrefix: EnvPrefix,
		Environ:   src.Environ,
		Overrides: src.Overrides,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if len(src.Derived) > 0 {
		if _, err := pcfg.Load(cfg, pcfg.Source{Overrides: src.Derived}); err != nil {
			return nil, nil, nil, err
		}
	}
	// pkg/config reports keys lower-cased; show them as the user wrote them.
	return cfg, set, pcfg.Spelled(unknownLower, src.File, src.Overrides, overlay), nil
}

// legacyKey reports RocketMQ 4.x keys that 5.x brokers silently ignore (old
// misspellings and paths that 5.x derives from storePathRootDir).
func legacyKey(k string) bool {
	switch strings.ToLower(k) {
	case "mapedfilesizecommitlog", "mapedfilesizeconsumequeue", "storepathconsumequeue", "storepathindex",
		"storecheckpoint", "abortfile", "checktransactionmessageenable", "haslavefallbehindmax":
		return true
	}
	return false
}

// Finalize applies the values Java's BrokerStartup derives after loading: a
// master's brokerId is forced to 0 (outside controller mode) and haListenPort
// ≤ 0 becomes listenPort + 1 (when listenPort is not 0).
func (c *Config) Finalize() {
	if !c.EnableControllerMode && c.BrokerRole != RoleSlave {
		c.BrokerID = protocol.MasterID
	}
	if c.HaListenPort <= 0 && c.ListenPort > 0 {
		// listenPort 0 (a free port, tests) leaves haListenPort 0: the HA
		// listener then picks a free port too.
		c.HaListenPort = c.ListenPort + 1
	}
	if c.BrokerIP1 == "" {
		c.BrokerIP1 = "127.0.0.1"
	}
	if c.BrokerIP2 == "" {
		c.BrokerIP2 = c.BrokerIP1
	}
}

// Validate rejects configurations the broker cannot run with.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if err := protocol.ValidateTopic(c.BrokerName); err != nil {
		bad("brokerName %q: it is also a topic name: %v", c.BrokerName, err)
	}
	if err := protocol.ValidateTopic(c.BrokerClusterName); err != nil {
		bad("brokerClusterName %q: it is also a topic name: %v", c.BrokerClusterName, err)
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listenPort %d out of range [0, 65535] (0 picks a free port)", c.ListenPort)
	}
	if c.GrpcServerPort < 0 || c.GrpcServerPort > 65535 {
		bad("grpcServerPort %d out of range [0, 65535] (0 picks a free port)", c.GrpcServerPort)
	}
	if c.GrpcClientConsumerMinLongPollingTimeoutMillis < 0 || c.GrpcClientConsumerMaxLongPollingTimeoutMillis < c.GrpcClientConsumerMinLongPollingTimeoutMillis {
		bad("grpcClientConsumerMinLongPollingTimeoutMillis %d and grpcClientConsumerMaxLongPollingTimeoutMillis %d: want 0 <= min <= max",
			c.GrpcClientConsumerMinLongPollingTimeoutMillis, c.GrpcClientConsumerMaxLongPollingTimeoutMillis)
	}
	if c.EnableSplitRegistration && c.SplitRegistrationSize < 1 {
		bad("splitRegistrationSize %d must be positive with enableSplitRegistration", c.SplitRegistrationSize)
	}
	if c.TimerSlackMicros < 0 || c.TimerSlackMicros > 100_000 {
		bad("timerSlackMicros %d out of range [0, 100000]", c.TimerSlackMicros)
	}
	if c.GrpcStreamWorkers < 0 || c.GrpcStreamWorkers > 65536 {
		bad("grpcStreamWorkers %d out of range [0, 65536]", c.GrpcStreamWorkers)
	}
	if c.GrpcClientConsumerLongPollingBatchSize < 1 {
		bad("grpcClientConsumerLongPollingBatchSize %d must be positive", c.GrpcClientConsumerLongPollingBatchSize)
	}
	if c.MinInvisibleTimeMillsForRecv < 0 || c.MaxInvisibleTimeMills < c.MinInvisibleTimeMillsForRecv {
		bad("minInvisibleTimeMillsForRecv %d and maxInvisibleTimeMills %d: want 0 <= min <= max", c.MinInvisibleTimeMillsForRecv, c.MaxInvisibleTimeMills)
	}
	if c.RenewSliceTimeMillis <= 0 || c.RenewAheadTimeMillis < 0 || c.RenewAheadTimeMillis >= c.RenewSliceTimeMillis || c.RenewMaxTimeMillis < 0 {
		bad("renewSliceTimeMillis %d, renewAheadTimeMillis %d, renewMaxTimeMillis %d: want 0 <= ahead < slice and max >= 0",
			c.RenewSliceTimeMillis, c.RenewAheadTimeMillis, c.RenewMaxTimeMillis)
	}
	if (c.TLSKeyPath == "") != (c.TLSCertPath == "") {
		bad("tlsKeyPath and tlsCertPath go together (both set, or neither for a self-signed certificate)")
	}
	if err := c.Settings.Validate(); err != nil {
		bad("%v", err)
	}
	if c.HaListenPort < 0 || c.HaListenPort > 65535 {
		bad("haListenPort %d out of range", c.HaListenPort)
	}
	if _, err := c.NamesrvAddrs(); err != nil {
		bad("%v", err)
	}
	if c.BrokerIP1 != "" && net.ParseIP(c.BrokerIP1) == nil && !validHostname(c.BrokerIP1) {
		bad("brokerIP1 %q is not an IP address or host name", c.BrokerIP1)
	}
	switch c.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster:
	case RoleSlave:
		if !c.EnableControllerMode && c.BrokerID <= 0 {
			bad("brokerRole SLAVE needs brokerId > 0 (got %d)", c.BrokerID)
		}
	default:
		bad("brokerRole %q: want ASYNC_MASTER, SYNC_MASTER or SLAVE", c.BrokerRole)
	}
	switch c.FlushDiskType {
	case FlushAsync, FlushSync:
	default:
		bad("flushDiskType %q: want ASYNC_FLUSH or SYNC_FLUSH", c.FlushDiskType)
	}
	if c.EnableControllerMode && c.EnableDLegerCommitLog {
		bad("enableControllerMode and enableDLegerCommitLog cannot both be true")
	}
	if c.EnableControllerMode && strings.TrimSpace(c.ControllerAddr) == "" {
		bad("enableControllerMode needs controllerAddr")
	}
	if c.EnableControllerMode && c.FetchControllerAddrByDNSLookup {
		if _, _, err := net.SplitHostPort(strings.TrimSpace(c.ControllerAddr)); err != nil {
			bad("fetchControllerAddrByDnsLookup needs controllerAddr as one domain:port, got %q", c.ControllerAddr)
		}
	}
	if c.BrokerPermission < 0 || c.BrokerPermission > 7 {
		bad("brokerPermission %d out of range [0, 7]", c.BrokerPermission)
	}
	if c.DefaultTopicQueueNums < 1 || c.DefaultTopicQueueNums > 1024 {
		bad("defaultTopicQueueNums %d out of range [1, 1024]", c.DefaultTopicQueueNums)
	}
	if c.StorePathRootDir == "" {
		bad("storePathRootDir is empty")
	}
	if c.MappedFileSizeCommitLog <= 0 {
		bad("mappedFileSizeCommitLog must be positive")
	}
	if c.MappedFileSizeConsumeQueue <= 0 || c.MappedFileSizeConsumeQueue%20 != 0 {
		bad("mappedFileSizeConsumeQueue %d must be a positive multiple of 20", c.MappedFileSizeConsumeQueue)
	}
	if c.MaxMessageSize <= 0 {
		bad("maxMessageSize must be positive")
	}
	if c.FileReservedTime <= 0 {
		bad("fileReservedTime must be positive (hours)")
	}
	if c.DiskMaxUsedSpaceRatio < 0 || c.DiskMaxUsedSpaceRatio > 100 {
		bad("diskMaxUsedSpaceRatio %d out of range [0, 100]", c.DiskMaxUsedSpaceRatio)
	}
	if err := validDeleteWhen(c.DeleteWhen); err != nil {
		bad("deleteWhen %q: %v", c.DeleteWhen, err)
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		bad("messageDelayLevel: %v", err)
	}
	if c.MsgTraceTopicName == "" || protocol.ValidateTopic(c.MsgTraceTopicName) != nil {
		bad("msgTraceTopicName %q is not a valid topic name", c.MsgTraceTopicName)
	}
	if c.RegisterNameServerPeriod <= 0 || c.RegisterBrokerTimeoutMills <= 0 {
		bad("registerNameServerPeriod and registerBrokerTimeoutMills must be positive")
	}
	for _, p := range []struct {
		name string
		n    int
	}{
		{"sendMessageThreadPoolNums", c.SendMessageThreadPoolNums},
		{"pullMessageThreadPoolNums", c.PullMessageThreadPoolNums},
		{"adminBrokerThreadPoolNums", c.AdminBrokerThreadPoolNums},
		{"sendThreadPoolQueueCapacity", c.SendThreadPoolQueueCapacity},
		{"pullThreadPoolQueueCapacity", c.PullThreadPoolQueueCapacity},
		{"adminBrokerThreadPoolQueueCapacity", c.AdminBrokerThreadPoolQueueCapacity},
		{"reviveQueueNum", c.ReviveQueueNum},
		{"transactionCheckMax", c.TransactionCheckMax},
	} {
		if p.n < 1 {
			bad("%s must be at least 1 (got %d)", p.name, p.n)
		}
	}
	if c.TotalReplicas < 1 || c.InSyncReplicas < 1 || c.MinInSyncReplicas < 1 {
		bad("totalReplicas, inSyncReplicas and minInSyncReplicas must be at least 1")
	}
	return errors.Join(errs...)
}

// Warnings reports accepted settings that probably do not do what the user
// expects.
func (c *Config) Warnings() []string {
	var w []string
	if c.BrokerRole == RoleSyncMaster && c.InSyncReplicas <= 1 {
		w = append(w, "brokerRole=SYNC_MASTER with inSyncReplicas<=1 does not wait for any slave in RocketMQ 5 (set inSyncReplicas=2 and totalReplicas=2 for synchronous replication)")
	}
	if c.EnableDLegerCommitLog {
		w = append(w, "enableDLegerCommitLog is not supported and is ignored")
	}
	if c.BrokerPermission&protocol.PermWrite == 0 {
		w = append(w, "brokerPermission has no WRITE bit: producers cannot send to this broker")
	}
	return w
}

// NamesrvAddrs splits namesrvAddr ("host:port;host:port") and checks each
// address as Java's BrokerStartup does.
func (c *Config) NamesrvAddrs() ([]string, error) {
	var out []string
	for _, a := range strings.Split(c.NamesrvAddr, ";") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("the Name Server Address[%s] illegal, please set it as follows, \"127.0.0.1:9876;192.168.0.1:9876\"", c.NamesrvAddr)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("the Name Server Address[%s] has a bad port %q", c.NamesrvAddr, port)
		}
		out = append(out, a)
	}
	return out, nil
}

// IsMaster reports whether this broker serves as master (route id 0).
func (c *Config) IsMaster() bool { return c.BrokerID == protocol.MasterID && c.BrokerRole != RoleSlave }

// ListenAddr is the address the remoting server binds.
func (c *Config) ListenAddr() string {
	host := c.BindAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(c.ListenPort))
}

// BrokerAddr is what the broker registers: brokerIP1:port.
func (c *Config) BrokerAddr(port int) string {
	return net.JoinHostPort(c.BrokerIP1, strconv.Itoa(port))
}

// HAServerAddr is brokerIP2:haListenPort.
func (c *Config) HAServerAddr() string {
	return net.JoinHostPort(c.BrokerIP2, strconv.Itoa(c.HaListenPort))
}

// OverlayPath is where runtime config updates persist.
func OverlayPath(c *Config) string {
	return filepath.Join(c.ConfigDir(), OverlayFileName)
}

// Properties renders every key as a properties text, sorted by key.
func (c *Config) Properties() string { return pcfg.Properties(c) }

// AdminProperties is Properties without the hidden keys (the auth
// keys): what GET_BROKER_CONFIG answers.
func (c *Config) AdminProperties() string {
	hidden := map[string]bool{}
	for _, k := range taggedKeys("hidden") {
		hidden[k] = true
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(c.Properties(), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok && hidden[k] {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// Map returns every key and its value in string form.
func (c *Config) Map() map[string]string { return pcfg.Map(c) }

// PrintProperties is what `broker -p` prints: Properties with
// pcfg.NoEffectComment on the line before each key marked
// `effect:"none"`.
func (c *Config) PrintProperties() string { return pcfg.AnnotatedProperties(c) }

// NoEffectKeys lists, sorted, the keys the broker accepts but that change
// nothing (fields tagged `effect:"none"`).
func NoEffectKeys() []string { return pcfg.NoEffectKeys(Config{}) }

// NoEffectIn returns, sorted and spelled canonically, the keys among keys
// (any case) that change nothing.
func NoEffectIn(keys []string) []string { return pcfg.NoEffectSet(Config{}, keys) }

// ImportantProperties renders the keys Java marks @ImportantField.
func (c *Config) ImportantProperties() string {
	m := c.Map()
	keys := taggedKeys("important")
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// ReadOnlyKeys lists keys that cannot change while the broker runs
// (identity, listeners, store layout, replication mode).
func ReadOnlyKeys() []string { return taggedKeys("readonly") }

// IsReadOnly reports whether key (case-insensitive) is read-only.
func IsReadOnly(key string) bool {
	for _, k := range ReadOnlyKeys() {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// taggedKeys lists, sorted, the keys of fields carrying tag:"true".
func taggedKeys(tag string) []string {
	var out []string
	for _, f := range pcfg.KeyedFields(reflect.TypeOf(Config{})) {
		if f.Tag.Get(tag) == "true" {
			out = append(out, f.Tag.Get("key"))
		}
	}
	sort.Strings(out)
	return out
}

// ParseDelayLevels parses "1s 5s 10s 30s 1m … 2h" (units s, m, h, d).
func ParseDelayLevels(s string) ([]time.Duration, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, errors.New("no delay levels")
	}
	out := make([]time.Duration, 0, len(fields))
	for _, f := range fields {
		if len(f) < 2 {
			return nil, fmt.Errorf("bad delay level %q", f)
		}
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad delay level %q", f)
		}
		var unit time.Duration
		switch f[len(f)-1] {
		case 's':
			unit = time.Second
		case 'm':
			unit = time.Minute
		case 'h':
			unit = time.Hour
		case 'd':
			unit = 24 * time.Hour
		default:
			return nil, fmt.Errorf("bad delay level %q: unit must be s, m, h or d", f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	return out, nil
}

// validDeleteWhen checks "04" or "04;05": hours of day, ';'-separated.
func validDeleteWhen(s string) error {
	for _, h := range strings.Split(s, ";") {
		n, err := strconv.Atoi(strings.TrimSpace(h))
		if err != nil || n < 0 || n > 23 {
			return fmt.Errorf("want hours 00..23 separated by ';'")
		}
	}
	return nil
}

func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// LocalIPv4 returns the address Java's NetworkUtil.getLocalAddress prefers:
// a public non-loopback IPv4, else the first private one, else 127.0.0.1.
func LocalIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	var private []string
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip4 := ipn.IP.To4()
			if ip4 == nil || ip4.IsLoopback() || ip4.IsLinkLocalUnicast() {
				continue
			}
			if !ip4.IsPrivate() {
				return ip4.String()
			}
			private = append(private, ip4.String())
		}
	}
	if len(private) > 0 {
		return private[0]
	}
	return "127.0.0.1"
}
