// Package config is the nameserver's configuration: Apache RocketMQ's
// NamesrvConfig and NettyServerConfig keys with their defaults (so an
// existing namesrv.conf loads unchanged), plus a few keys of our own.
package config

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pkgconfig "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/tlsconfig"

	"github.com/rmqgo/rmq/internal/fsutil"
)

// EnvPrefix is the environment prefix: listenPort ← NAMESRV_LISTEN_PORT.
const EnvPrefix = "NAMESRV"

// Default file names, resolved against DataDir when relative.
const (
	DefaultKVConfigFile    = "kvConfig.json"
	DefaultConfigStoreFile = "namesrv.properties"
)

// NettyServerConfig holds Apache's NettyServerConfig keys. Only bindAddress,
// listenPort, serverChannelMaxIdleTimeSeconds and shutdownWaitTimeSeconds
// change our behaviour; the others are accepted so that Apache configuration
// files load and GET_NAMESRV_CONFIG shows what Java tools expect, and carry
// `effect:"none"` like every key of the nameserver that changes nothing
// (warned about at start, marked by -p, listed in docs/operations.md and
// checked by TestNoEffectKeysDocumented and TestNoEffectKeysUnread).
type NettyServerConfig struct {
	BindAddress                        string `key:"bindAddress"`
	ListenPort                         int    `key:"listenPort"`
	ServerWorkerThreads                int    `key:"serverWorkerThreads" effect:"none"`
	ServerCallbackExecutorThreads      int    `key:"serverCallbackExecutorThreads" effect:"none"`
	ServerSelectorThreads              int    `key:"serverSelectorThreads" effect:"none"`
	ServerOnewaySemaphoreValue         int    `key:"serverOnewaySemaphoreValue" effect:"none"`
	ServerAsyncSemaphoreValue          int    `key:"serverAsyncSemaphoreValue" effect:"none"`
	ServerChannelMaxIdleTimeSeconds    int    `key:"serverChannelMaxIdleTimeSeconds"`
	ServerSocketSndBufSize             int    `key:"serverSocketSndBufSize" effect:"none"`
	ServerSocketRcvBufSize             int    `key:"serverSocketRcvBufSize" effect:"none"`
	WriteBufferHighWaterMark           int    `key:"writeBufferHighWaterMark" effect:"none"`
	WriteBufferLowWaterMark            int    `key:"writeBufferLowWaterMark" effect:"none"`
	ServerSocketBacklog                int    `key:"serverSocketBacklog" effect:"none"`
	ServerNettyWorkerGroupEnable       bool   `key:"serverNettyWorkerGroupEnable" effect:"none"`
	ServerPooledByteBufAllocatorEnable bool   `key:"serverPooledByteBufAllocatorEnable" effect:"none"`
	EnableShutdownGracefully           bool   `key:"enableShutdownGracefully" effect:"none"`
	ShutdownWaitTimeSeconds            int    `key:"shutdownWaitTimeSeconds"`
	UseEpollNativeSelector             bool   `key:"useEpollNativeSelector" effect:"none"`
}

// Config is the whole nameserver configuration. A *Config obtained from a
// Store is a snapshot shared between goroutines: never modify it.
type Config struct {
	// Apache NamesrvConfig.
	RocketmqHome                         string        `key:"rocketmqHome" effect:"none"`
	KVConfigPath                         string        `key:"kvConfigPath"`
	ConfigStorePath                      string        `key:"configStorePath"`
	ProductEnvName                       string        `key:"productEnvName" effect:"none"`
	ClusterTest                          bool          `key:"clusterTest" effect:"none"`
	OrderMessageEnable                   bool          `key:"orderMessageEnable"`
	ReturnOrderTopicConfigToBroker       bool          `key:"returnOrderTopicConfigToBroker"`
	ClientRequestThreadPoolNums          int           `key:"clientRequestThreadPoolNums"`
	DefaultThreadPoolNums                int           `key:"defaultThreadPoolNums"`
	ClientRequestThreadPoolQueueCapacity int           `key:"clientRequestThreadPoolQueueCapacity"`
	DefaultThreadPoolQueueCapacity       int           `key:"defaultThreadPoolQueueCapacity"`
	ScanNotActiveBrokerInterval          time.Duration `key:"scanNotActiveBrokerInterval"`
	UnRegisterBrokerQueueCapacity        int           `key:"unRegisterBrokerQueueCapacity" effect:"none"`
	SupportActingMaster                  bool          `key:"supportActingMaster"`
	EnableAllTopicList                   bool          `key:"enableAllTopicList"`
	EnableTopicList                      bool          `key:"enableTopicList"`
	NotifyMinBrokerIDChanged             bool          `key:"notifyMinBrokerIdChanged" effect:"none"`
	EnableControllerInNamesrv            bool          `key:"enableControllerInNamesrv"`
	NeedWaitForService                   bool          `key:"needWaitForService"`
	WaitSecondsForService                int           `key:"waitSecondsForService"`
	DeleteTopicWithBrokerRegistration    bool          `key:"deleteTopicWithBrokerRegistration"`
	ConfigBlackList                      string        `key:"configBlackList"`

	NettyServerConfig

	// The embedded HA controller's keys (enableControllerInNamesrv=true).
	ControllerKeys

	// Apache's tls.* keys (pkg/tlsconfig): the nameserver's port and the
	// embedded controller's take tls.server.*, the controller's outgoing
	// notifications tls.enable and tls.client.*.
	tlsconfig.Settings

	// Ours: the directory relative kvConfigPath / configStorePath resolve
	// against. Empty means $HOME/namesrv, Apache's location.
	DataDir string `key:"dataDir"`
}

// Default returns Apache's defaults. Paths stay relative until Resolve.
func Default() Config {
	return Config{
		KVConfigPath:                         DefaultKVConfigFile,
		ConfigStorePath:                      DefaultConfigStoreFile,
		ProductEnvName:                       "center",
		ReturnOrderTopicConfigToBroker:       true,
		ClientRequestThreadPoolNums:          8,
		DefaultThreadPoolNums:                16,
		ClientRequestThreadPoolQueueCapacity: 50000,
		DefaultThreadPoolQueueCapacity:       10000,
		ScanNotActiveBrokerInterval:          5 * time.Second,
		UnRegisterBrokerQueueCapacity:        3000,
		EnableAllTopicList:                   true,
		EnableTopicList:                      true,
		WaitSecondsForService:                45,
		ConfigBlackList:                      "configBlackList;configStorePath;kvConfigPath",
		ControllerKeys:                       DefaultControllerKeys(),
		Settings:                             tlsconfig.Defaults(),
		NettyServerConfig: NettyServerConfig{
			BindAddress:                        "0.0.0.0",
			ListenPort:                         9876,
			ServerWorkerThreads:                8,
			ServerSelectorThreads:              3,
			ServerOnewaySemaphoreValue:         256,
			ServerAsyncSemaphoreValue:          64,
			ServerChannelMaxIdleTimeSeconds:    120,
			ServerSocketBacklog:                1024,
			ServerNettyWorkerGroupEnable:       true,
			ServerPooledByteBufAllocatorEnable: true,
			ShutdownWaitTimeSeconds:            30,
		},
	}
}

// Source says where to load from; see pkg/config.Source.
type Source = pkgconfig.Source

// Load builds a configuration: defaults, then src (file, NAMESRV_* env,
// overrides). It returns the keys that match nothing so the caller can warn
// about them. The result is resolved (absolute paths) and validated.
func Load(src Source, home string) (Config, []string, error) {
	c, _, unknown, err := LoadKeys(src, home)
	return c, unknown, err
}

// LoadKeys is Load that also returns the keys src sets (canonical
// spelling, sorted), for NoEffectSet.
func LoadKeys(src Source, home string) (c Config, set, unknown []string, err error) {
	c = Default()
	if src.EnvPrefix == "" {
		src.EnvPrefix = EnvPrefix
	}
	set, unknown, err = pkgconfig.LoadSet(&c, src)
	if err != nil {
		return c, set, unknown, err
	}
	if src.File != "" {
		// Apache remembers the file it booted from and writes runtime
		// updates (UPDATE_NAMESRV_CONFIG) back into it.
		abs, err := filepath.Abs(src.File)
		if err != nil {
			return c, set, unknown, fmt.Errorf("config: resolve %s: %w", src.File, err)
		}
		c.ConfigStorePath = abs
	}
	if c.RocketmqHome == "" {
		for _, kv := range src.Environ {
			if v, ok := strings.CutPrefix(kv, "ROCKETMQ_HOME="); ok {
				c.RocketmqHome = v
			}
		}
	}
	c.Resolve(home)
	return c, set, unknown, c.Validate()
}

// NoEffectKeys lists, sorted, the keys the nameserver accepts but that
// change nothing (fields tagged `effect:"none"`).
func NoEffectKeys() []string { return pkgconfig.NoEffectKeys(Config{}) }

// NoEffectSet returns the keys of set (as LoadKeys returns them) that
// change nothing: the nameserver warns about them at start.
func NoEffectSet(set []string) []string { return pkgconfig.NoEffectSet(Config{}, set) }

// Resolve makes DataDir, KVConfigPath and ConfigStorePath absolute. home is
// the user's home directory (empty: the current directory).
func (c *Config) Resolve(home string) {
	if c.DataDir == "" {
		c.DataDir = filepath.Join(home, "namesrv")
	}
	if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	c.KVConfigPath = resolvePath(c.DataDir, c.KVConfigPath, DefaultKVConfigFile)
	c.ConfigStorePath = resolvePath(c.DataDir, c.ConfigStorePath, DefaultConfigStoreFile)
}

func resolvePath(dir, p, def string) string {
	if p == "" {
		p = def
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// Validate rejects values the nameserver cannot run with.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listenPort %d out of range 0..65535", c.ListenPort)
	}
	if c.ScanNotActiveBrokerInterval <= 0 {
		bad("scanNotActiveBrokerInterval must be positive, got %v", c.ScanNotActiveBrokerInterval)
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{"clientRequestThreadPoolNums", c.ClientRequestThreadPoolNums},
		{"defaultThreadPoolNums", c.DefaultThreadPoolNums},
		{"clientRequestThreadPoolQueueCapacity", c.ClientRequestThreadPoolQueueCapacity},
		{"defaultThreadPoolQueueCapacity", c.DefaultThreadPoolQueueCapacity},
		{"unRegisterBrokerQueueCapacity", c.UnRegisterBrokerQueueCapacity},
	} {
		if f.v < 1 {
			bad("%s must be at least 1, got %d", f.key, f.v)
		}
	}
	if c.WaitSecondsForService < 0 {
		bad("waitSecondsForService must not be negative, got %d", c.WaitSecondsForService)
	}
	if c.ServerChannelMaxIdleTimeSeconds < 0 {
		bad("serverChannelMaxIdleTimeSeconds must not be negative, got %d", c.ServerChannelMaxIdleTimeSeconds)
	}
	if c.KVConfigPath == "" {
		bad("kvConfigPath is empty")
	}
	if c.EnableControllerInNamesrv {
		if err := c.ControllerKeys.Validate(); err != nil {
			bad("enableControllerInNamesrv=true: %w", err)
		}
	}
	if err := c.Settings.Validate(); err != nil {
		bad("%w", err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return nil
}

// ListenAddr is bindAddress:listenPort.
func (c *Config) ListenAddr() string {
	host := c.BindAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return fmt.Sprintf("%s:%d", host, c.ListenPort)
}

// IdleTimeout is serverChannelMaxIdleTimeSeconds (0: never).
func (c *Config) IdleTimeout() time.Duration {
	return time.Duration(c.ServerChannelMaxIdleTimeSeconds) * time.Second
}

// fixedBlackList are keys no request may change at runtime: Apache's fixed
// list plus our dataDir (the files were opened from it at boot).
func fixedBlackList() []string {
	return []string{"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "dataDir"}
}

// BlackListed reports whether UPDATE_NAMESRV_CONFIG must refuse key.
// Comparison ignores case because keys are matched case-insensitively when
// applied, so "KVConfigPath" must not slip through.
func (c *Config) BlackListed(key string) bool {
	for _, k := range fixedBlackList() {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	for _, k := range strings.Split(c.ConfigBlackList, ";") {
		if k = strings.TrimSpace(k); k != "" && strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// Known reports whether key is a configuration key.
func Known(key string) bool {
	var c Config
	return pkgconfig.Has(&c, key)
}

// Properties renders the configuration as properties text, keys sorted.
func (c *Config) Properties() string { return pkgconfig.Properties(c) }

// PrintProperties is what `namesrv -p` prints: Properties with
// pkgconfig.NoEffectComment on the line before each key that changes
// nothing.
func (c *Config) PrintProperties() string { return pkgconfig.AnnotatedProperties(c) }

// ImportantProperties renders the keys an operator checks first (`-m`).
func (c *Config) ImportantProperties() string {
	m := pkgconfig.Map(c)
	var b strings.Builder
	for _, k := range []string{"listenPort", "bindAddress", "dataDir", "kvConfigPath", "configStorePath", "rocketmqHome",
		"orderMessageEnable", "deleteTopicWithBrokerRegistration", "scanNotActiveBrokerInterval", "enableAllTopicList", "enableTopicList"} {
		fmt.Fprintf(&b, "%s=%s\n", k, m[k])
	}
	return b.String()
}

// Store holds the live configuration; UPDATE_NAMESRV_CONFIG swaps in a new
// snapshot so readers never lock.
type Store struct {
	mu  sync.Mutex // serializes updates
	cur atomic.Pointer[Config]
}

// NewStore starts with c.
func NewStore(c Config) *Store {
	s := &Store{}
	s.cur.Store(&c)
	return s
}

// Get returns the current snapshot (read-only).
func (s *Store) Get() *Config { return s.cur.Load() }

// Update applies key=value pairs to a copy, validates it and installs it.
// Keys are not checked against the black list here; callers do that so they
// can answer with the right code.
func (s *Store) Update(props map[string]string) (*Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := *s.cur.Load()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if err := pkgconfig.Set(&next, k, props[k]); err != nil {
			return nil, err
		}
	}
	if err := next.Validate(); err != nil {
		return nil, err
	}
	s.cur.Store(&next)
	return &next, nil
}

// Persist writes c's properties to its configStorePath, atomically.
func Persist(c *Config) error {
	return fsutil.WriteFileAtomic(c.ConfigStorePath, []byte(c.Properties()), false)
}
