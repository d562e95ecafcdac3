package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
)

func testConfig(t *testing.T, dataDir string) nsconfig.Config {
	t.Helper()
	c := nsconfig.Default()
	c.BindAddress = "127.0.0.1"
	c.ListenPort = 0
	c.DataDir = dataDir
	c.Resolve("")
	return c
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

func startServer(t *testing.T, cfg nsconfig.Config, opts ...Option) *Server {
	t.Helper()
	s, err := New(cfg, testLogger(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, s, 5*time.Second, t.Errorf)
	return s
}

func newClient(t *testing.T) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func invoke(t *testing.T, c *remoting.Client, addr string, reqCode int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(reqCode, ext, body))
	if err != nil {
		t.Fatalf("invoke %d: %v", reqCode, err)
	}
	return resp
}

func brokerExt(name, addr string, id int) map[string]string {
	return map[string]string{"clusterName": "DefaultCluster", "brokerName": name, "brokerAddr": addr,
		"brokerId": fmt.Sprint(id), "haServerAddr": addr, "enableActingMaster": "false"}
}

func regBody(topics ...string) []byte {
	w := protocol.RegisterBrokerBody{FilterServerList: []string{}}
	w.TopicConfigSerializeWrapper.DataVersion = protocol.DataVersion{Counter: 1, Timestamp: 1}
	w.TopicConfigSerializeWrapper.TopicConfigTable = map[string]protocol.TopicConfig{}
	for _, t := range topics {
		w.TopicConfigSerializeWrapper.TopicConfigTable[t] = protocol.NewTopicConfig(t)
	}
	return protocol.MustMarshal(w)
}

func TestRegisterRouteUnregisterOverTCP(t *testing.T) {
	s := startServer(t, testConfig(t, t.TempDir()))
	broker, client := newClient(t), newClient(t)

	resp := invoke(t, broker, s.Addr(), code.RegisterBroker, brokerExt("broker-a", "127.0.0.1:10911", 0), regBody("TopicTest"))
	if resp.Code != code.Success {
		t.Fatalf("register: %d %s", resp.Code, resp.Remark)
	}
	resp = invoke(t, client, s.Addr(), code.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil)
	if resp.Code != code.Success || !strings.Contains(string(resp.Body), `"brokerAddrs":{"0":"127.0.0.1:10911"}`) {
		t.Fatalf("route: %d %s", resp.Code, resp.Body)
	}
	resp = invoke(t, broker, s.Addr(), code.UnregisterBroker, brokerExt("broker-a", "127.0.0.1:10911", 0), nil)
	if resp.Code != code.Success {
		t.Fatalf("unregister: %d", resp.Code)
	}
	resp = invoke(t, client, s.Addr(), code.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil)
	if resp.Code != code.TopicNotExist {
		t.Fatalf("route after unregister: %d", resp.Code)
	}

	// Re-register, then drop the broker's connection: its routes go at once.
	invoke(t, broker, s.Addr(), code.RegisterBroker, brokerExt("broker-a", "127.0.0.1:10911", 0), regBody("TopicTest"))
	if r := invoke(t, client, s.Addr(), code.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil); r.Code != code.Success {
		t.Fatalf("route after re-register: %d", r.Code)
	}
	broker.CloseConn(s.Addr())
	testutil.WaitFor(t, 5*time.Second, "route removal after connection close", func() bool {
		return invoke(t, client, s.Addr(), code.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil).Code == code.TopicNotExist
	})
	// Unknown codes are answered, not dropped.
	if r := invoke(t, client, s.Addr(), 9999, nil, nil); r.Code != code.RequestCodeNotSupported {
		t.Fatalf("unknown code: %d", r.Code)
	}
}

func TestExpiryScanClosesSilentBroker(t *testing.T) {
	clk := testutil.NewFakeClock(time.Now())
	cfg := testConfig(t, t.TempDir())
	cfg.ScanNotActiveBrokerInterval = 20 * time.Millisecond
	s := startServer(t, cfg, WithClock(clk.Now))
	broker := newClient(t)
	invoke(t, broker, s.Addr(), code.RegisterBroker, brokerExt("broker-a", "127.0.0.1:10911", 0), regBody("T"))
	if _, ok := s.Routes().RouteJSON("T"); !ok {
		t.Fatal("no route")
	}
	clk.Advance(119 * time.Second)
	time.Sleep(60 * time.Millisecond)
	if _, ok := s.Routes().RouteJSON("T"); !ok {
		t.Fatal("expired before 120 s")
	}
	clk.Advance(2 * time.Second)
	testutil.WaitFor(t, 5*time.Second, "expiry", func() bool { _, ok := s.Routes().RouteJSON("T"); return !ok })
	// The server closed the broker's connection; the client notices.
	testutil.WaitFor(t, 5*time.Second, "connection close", func() bool { return len(s.remote.Channels()) == 0 })
}

func TestKVAndConfigPersistAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	s, err := New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	if r := invoke(t, c, s.Addr(), code.PutKVConfig, map[string]string{"namespace": "ns", "key": "k", "value": "v"}, nil); r.Code != code.Success {
		t.Fatalf("put: %d %s", r.Code, r.Remark)
	}
	if r := invoke(t, c, s.Addr(), code.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true\n")); r.Code != code.Success {
		t.Fatalf("update config: %d %s", r.Code, r.Remark)
	}
	if r := invoke(t, c, s.Addr(), code.UpdateNamesrvConfig, nil, []byte("kvConfigPath=/etc/passwd\n")); r.Code != code.NoPermission {
		t.Fatalf("black-listed update: %d %s", r.Code, r.Remark)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(cfg.ConfigStorePath)
	if err != nil {
		t.Fatalf("config not persisted: %v", err)
	}
	props, err := config.ParseProperties(data)
	if err != nil || props["orderMessageEnable"] != "true" {
		t.Fatalf("persisted config %v %v", props, err)
	}

	s2 := startServer(t, cfg)
	c2 := newClient(t)
	r := invoke(t, c2, s2.Addr(), code.GetKVConfig, map[string]string{"namespace": "ns", "key": "k"}, nil)
	if r.Code != code.Success || r.Ext("value") != "v" {
		t.Fatalf("kv after restart: %d %v", r.Code, r.ExtFields)
	}
}

func TestCorruptKVFileRefusesToStart(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	if err := os.WriteFile(cfg.KVConfigPath, []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "kvConfig.json") {
		t.Fatalf("want parse error naming the file, got %v", err)
	}
}

func TestShutdownWithoutStart(t *testing.T) {
	s, err := New(testConfig(t, t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
