package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func testHost(t *testing.T) Host {
	t.Helper()
	return Host{Hostname: "host-1", IP: "192.0.2.7", Home: t.TempDir(), Env: map[string]string{}}
}

func TestDefaultsMatchJava(t *testing.T) {
	c := Default(testHost(t))
	c.Finalize()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		key, want string
	}{
		{"listenPort", "10911"},
		{"brokerClusterName", "DefaultCluster"},
		{"brokerName", "host-1"},
		{"brokerId", "0"},
		{"brokerIP1", "192.0.2.7"},
		{"brokerRole", "ASYNC_MASTER"},
		{"flushDiskType", "ASYNC_FLUSH"},
		{"mappedFileSizeCommitLog", "1073741824"},
		{"autoCreateTopicEnable", "true"},
		{"autoCreateSubscriptionGroup", "true"},
		{"defaultTopicQueueNums", "8"},
		{"brokerPermission", "6"},
		{"registerNameServerPeriod", "30000"},
		{"registerBrokerTimeoutMills", "24000"},
		{"forceRegister", "true"},
		{"fileReservedTime", "72"},
		{"deleteWhen", "04"},
		{"diskMaxUsedSpaceRatio", "75"},
		{"maxMessageSize", "4194304"},
		{"sendThreadPoolQueueCapacity", "10000"},
		{"pullThreadPoolQueueCapacity", "100000"},
		{"traceTopicEnable", "false"},
		{"msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC"},
		{"transactionTimeOut", "6000"},
		{"transactionCheckMax", "15"},
		{"transactionCheckInterval", "30000"},
		{"longPollingEnable", "true"},
		{"enableLmq", "false"},
		{"timerWheelEnable", "true"},
		{"enableControllerMode", "false"},
		{"haListenPort", "10912"},
		{"messageDelayLevel", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"},
	}
	m := c.Map()
	for _, tc := range checks {
		if got := m[tc.key]; got != tc.want {
			t.Errorf("%s = %q, want %q", tc.key, got, tc.want)
		}
	}
	if !strings.HasSuffix(c.StorePathRootDir, string(filepath.Separator)+"store") {
		t.Errorf("storePathRootDir %q should be $HOME/store", c.StorePathRootDir)
	}
	if got := c.CommitLogDir(); got != filepath.Join(c.StorePathRootDir, "commitlog") {
		t.Errorf("CommitLogDir = %q", got)
	}
}

func TestLoadBrokerConf(t *testing.T) {
	h := testHost(t)
	h.Env["NAMESRV_ADDR"] = "192.0.2.99:9876" // lower precedence than the file
	res, err := Load(Source{File: "testdata/broker.conf", Host: h, NoOverlay: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	if c.BrokerClusterName != "ProdCluster" || c.BrokerName != "broker-a" || c.BrokerRole != RoleSyncMaster {
		t.Errorf("identity: %s/%s/%s", c.BrokerClusterName, c.BrokerName, c.BrokerRole)
	}
	if c.ListenPort != 10921 || c.HaListenPort != 10922 {
		t.Errorf("listenPort %d haListenPort %d, want 10921/10922", c.ListenPort, c.HaListenPort)
	}
	addrs, err := c.NamesrvAddrs()
	if err != nil || !slices.Equal(addrs, []string{"10.0.0.1:9876", "10.0.0.2:9876"}) {
		t.Errorf("NamesrvAddrs = %v, %v", addrs, err)
	}
	if c.AutoCreateTopicEnable || c.DefaultTopicQueueNums != 4 || !c.TraceTopicEnable || !c.EnablePropertyFilter {
		t.Errorf("topic settings not loaded: %+v", c.BrokerConfig)
	}
	if c.TransactionCheckInterval != time.Minute || c.FileReservedTime != 48 || c.DiskMaxUsedSpaceRatio != 88 {
		t.Errorf("durations/ints not loaded")
	}
	if c.MaxMessageSize != 8<<20 || c.SendMessageThreadPoolNums != 8 || c.PullMessageThreadPoolNums != 32 {
		t.Errorf("sizes/pools not loaded")
	}
	// brokerIP2 defaults to the local address, not brokerIP1 (as in Java).
	if c.BrokerAddr(10921) != "10.0.0.11:10921" || c.HAServerAddr() != "192.0.2.7:10922" {
		t.Errorf("addresses: %s %s", c.BrokerAddr(10921), c.HAServerAddr())
	}
	levels, err := c.DelayLevels()
	if err != nil || len(levels) != 19 || levels[18] != 24*time.Hour {
		t.Errorf("delay levels %v %v", levels, err)
	}
	if !slices.Equal(res.Unknown, []string{"autoCreateTopicEnabel"}) {
		t.Errorf("Unknown = %v, want the typo as written", res.Unknown)
	}
	if !slices.Equal(res.Legacy, []string{"mapedFileSizeCommitLog", "storePathIndex"}) {
		t.Errorf("Legacy = %v", res.Legacy)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("unexpected warnings %v", res.Warnings)
	}
}

func TestLoadPrecedence(t *testing.T) {
	h := testHost(t)
	h.Env["NAMESRV_ADDR"] = "192.0.2.1:9876"
	file := filepath.Join(t.TempDir(), "b.conf")
	write(t, file, "listenPort=10001\nbrokerName=from-file\nstorePathRootDir="+filepath.Join(t.TempDir(), "s")+"\n")

	// Env NAMESRV_ADDR is Java's default; BROKER_* beats the file; flags beat all.
	res, err := Load(Source{
		File:      file,
		Host:      h,
		Environ:   []string{"BROKER_LISTEN_PORT=10002", "BROKER_BROKER_NAME=from-env", "UNRELATED=1"},
		Overrides: map[string]string{"brokerName": "from-flag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Config
	if c.NamesrvAddr != "192.0.2.1:9876" || c.ListenPort != 10002 || c.BrokerName != "from-flag" {
		t.Errorf("namesrv %q port %d name %q", c.NamesrvAddr, c.ListenPort, c.BrokerName)
	}
}

func TestFinalizeAndValidate(t *testing.T) {
	base := func() *Config { c := Default(testHost(t)); c.Finalize(); return c }
	t.Run("master brokerId forced to 0", func(t *testing.T) {
		c := base()
		c.BrokerID = 3
		c.Finalize()
		if c.BrokerID != 0 {
			t.Errorf("brokerId %d", c.BrokerID)
		}
	})
	t.Run("slave keeps its id", func(t *testing.T) {
		c := base()
		c.BrokerRole, c.BrokerID = RoleSlave, 2
		c.Finalize()
		if c.BrokerID != 2 || c.IsMaster() {
			t.Errorf("brokerId %d master %v", c.BrokerID, c.IsMaster())
		}
	})
	bad := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"slave id 0", func(c *Config) { c.BrokerRole, c.BrokerID = RoleSlave, 0 }, "brokerId > 0"},
		{"bad role", func(c *Config) { c.BrokerRole = "MASTER" }, "brokerRole"},
		{"bad flush", func(c *Config) { c.FlushDiskType = "SOMETIMES" }, "flushDiskType"},
		{"bad namesrv", func(c *Config) { c.NamesrvAddr = "10.0.0.1" }, "Name Server Address"},
		{"bad namesrv port", func(c *Config) { c.NamesrvAddr = "10.0.0.1:99999" }, "bad port"},
		{"perm 9", func(c *Config) { c.BrokerPermission = 9 }, "brokerPermission"},
		{"queues 0", func(c *Config) { c.DefaultTopicQueueNums = 0 }, "defaultTopicQueueNums"},
		{"broker name chars", func(c *Config) { c.BrokerName = "broker a" }, "brokerName"},
		{"deleteWhen", func(c *Config) { c.DeleteWhen = "25" }, "deleteWhen"},
		{"delay levels", func(c *Config) { c.MessageDelayLevel = "1s 5x" }, "messageDelayLevel"},
		{"controller+dledger", func(c *Config) {
			c.EnableControllerMode, c.EnableDLegerCommitLog, c.ControllerAddr = true, true, "127.0.0.1:9878"
		}, "cannot both be true"},
		{"controller without addr", func(c *Config) { c.EnableControllerMode = true }, "controllerAddr"},
		{"controller dns lookup without addr", func(c *Config) {
			c.EnableControllerMode, c.FetchControllerAddrByDNSLookup = true, true
		}, "controllerAddr"},
		{"controller dns lookup of a list", func(c *Config) {
			c.EnableControllerMode, c.FetchControllerAddrByDNSLookup, c.ControllerAddr = true, true, "a:9878;b:9878"
		}, "one domain:port"},
		{"port", func(c *Config) { c.ListenPort = 70000 }, "listenPort"},
		{"grpc port", func(c *Config) { c.GrpcServerPort = 70000 }, "grpcServerPort"},
		{"tls key without cert", func(c *Config) { c.TLSKeyPath = "/k.pem" }, "tlsKeyPath and tlsCertPath"},
		{"tls cert without key", func(c *Config) { c.TLSCertPath = "/c.pem" }, "tlsKeyPath and tlsCertPath"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want mention of %q", err, tc.want)
			}
		})
	}
	t.Run("sync master warning", func(t *testing.T) {
		c := base()
		c.BrokerRole = RoleSyncMaster
		if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "inSyncReplicas") {
			t.Errorf("warnings %v", w)
		}
	})
}

func TestImportantAndReadOnlyKeys(t *testing.T) {
	c := Default(testHost(t))
	imp := c.ImportantProperties()
	for _, k := range []string{"brokerName=", "namesrvAddr=", "listenPort=", "storePathRootDir=", "brokerRole=", "flushDiskType="} {
		if !strings.Contains(imp, k) {
			t.Errorf("important config lacks %s", k)
		}
	}
	if strings.Contains(imp, "popPollingSize=") {
		t.Error("important config lists an unimportant key")
	}
	for _, k := range []string{"brokerName", "brokerclustername", "listenPort", "storePathRootDir", "brokerRole"} {
		if !IsReadOnly(k) {
			t.Errorf("%s should be read-only", k)
		}
	}
	if IsReadOnly("brokerPermission") {
		t.Error("brokerPermission must be updatable")
	}
}

func TestHolderUpdate(t *testing.T) {
	h := testHost(t)
	c := Default(h)
	c.Finalize()
	hold := NewHolder(c, true)
	v0 := hold.Version()

	for _, tc := range []struct {
		kv   map[string]string
		want error
	}{
		{map[string]string{"brokerName": "x"}, ErrReadOnly},
		{map[string]string{"listenPort": "1"}, ErrReadOnly},
		{map[string]string{"brokerConfigPath": "/x"}, ErrReadOnly}, // Java's default black list
		{map[string]string{"configBlackList": ""}, ErrReadOnly},
		{map[string]string{"noSuchKey": "1"}, ErrUnknownKey},
		{map[string]string{"brokerPermission": "nine"}, ErrInvalidValue},
		{map[string]string{"brokerPermission": "9"}, ErrInvalidValue},
		// All-or-nothing: the valid key must not be applied either.
		{map[string]string{"defaultTopicQueueNums": "5", "maxMessageSize": "-1"}, ErrInvalidValue},
	} {
		if _, err := hold.Update(tc.kv); !errors.Is(err, tc.want) {
			t.Errorf("Update(%v) = %v, want %v", tc.kv, err, tc.want)
		}
	}
	if hold.Get().DefaultTopicQueueNums != 8 || hold.Version() != v0 {
		t.Fatalf("a failed update changed the config")
	}

	changed, err := hold.Update(map[string]string{"brokerPermission": "4", "autoCreateTopicEnable": "false", "fileReservedTime": "72"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"autoCreateTopicEnable", "brokerPermission"}) {
		t.Errorf("changed = %v (unchanged values must not be listed)", changed)
	}
	if got := hold.Get(); got.BrokerPermission != 4 || got.AutoCreateTopicEnable {
		t.Errorf("not applied: %d %v", got.BrokerPermission, got.AutoCreateTopicEnable)
	}
	if c.BrokerPermission != 6 {
		t.Error("the published snapshot was modified in place")
	}
	if v := hold.Version(); v.Counter != v0.Counter+1 {
		t.Errorf("version %v after one update from %v", v, v0)
	}

	// The overlay survives a restart and beats the file, flags still win.
	file := filepath.Join(t.TempDir(), "broker.conf")
	write(t, file, "storePathRootDir="+c.StorePathRootDir+"\nbrokerPermission=6\nfileReservedTime=10\n")
	res, err := Load(Source{File: file, Host: h, Overrides: map[string]string{"autoCreateTopicEnable": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.BrokerPermission != 4 || !res.Config.AutoCreateTopicEnable || res.Config.FileReservedTime != 10 {
		t.Errorf("after reload: perm %d autoCreate %v reserved %d", res.Config.BrokerPermission, res.Config.AutoCreateTopicEnable, res.Config.FileReservedTime)
	}
	if !slices.Equal(res.OverlayKeys, []string{"autoCreateTopicEnable", "brokerPermission"}) {
		t.Errorf("OverlayKeys = %v", res.OverlayKeys)
	}
}

func TestParseDelayLevels(t *testing.T) {
	got, err := ParseDelayLevels("1s 2m 3h 1d")
	want := []time.Duration{time.Second, 2 * time.Minute, 3 * time.Hour, 24 * time.Hour}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "1", "0s", "-1s", "1w", "s"} {
		if _, err := ParseDelayLevels(bad); err == nil {
			t.Errorf("ParseDelayLevels(%q) accepted", bad)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHaListenPortDerived: haListenPort ≤ 0 is listenPort+1, except with
// listenPort 0 (a free port), where it stays 0 (a free port too).
func TestHaListenPortDerived(t *testing.T) {
	for _, tc := range []struct{ listen, ha, want int }{{10911, 0, 10912}, {10911, 20000, 20000}, {0, 0, 0}, {0, 30000, 30000}} {
		c := Default(testHost(t))
		c.ListenPort, c.HaListenPort = tc.listen, tc.ha
		c.Finalize()
		if c.HaListenPort != tc.want {
			t.Errorf("listenPort %d haListenPort %d: got %d, want %d", tc.listen, tc.ha, c.HaListenPort, tc.want)
		}
	}
}

// TestAuthKeysHiddenAndFixed: the auth keys (secrets among them) are not
// in GET_BROKER_CONFIG's properties and cannot change at runtime, as
// Apache keeps them out of the broker's runtime Configuration.
func TestAuthKeysHiddenAndFixed(t *testing.T) {
	c := Default(Host{Hostname: "h", IP: "127.0.0.1", Home: t.TempDir()})
	c.AuthenticationEnabled = true
	c.InitAuthenticationUser = `{"username":"root","password":"s3cret"}`
	c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"s3cret2"}`
	props := c.AdminProperties()
	for _, k := range []string{"authenticationEnabled", "initAuthenticationUser", "innerClientAuthenticationCredentials", "aclCacheMaxNum", "s3cret"} {
		if strings.Contains(props, k) {
			t.Errorf("GET_BROKER_CONFIG properties show %q", k)
		}
	}
	if !strings.Contains(props, "brokerClusterName=") {
		t.Fatal("AdminProperties lost the broker keys")
	}
	hold := NewHolder(c, false)
	for _, k := range []string{"authenticationEnabled", "initAuthenticationUser", "authorizationWhitelist"} {
		if _, err := hold.Update(map[string]string{k: "false"}); !errors.Is(err, ErrReadOnly) {
			t.Errorf("update of %s: %v, want ErrReadOnly", k, err)
		}
	}
}
