package broker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func testConfig(t *testing.T, store, namesrvAddr string) *config.Config {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	c.ListenPort = 0
	c.BindAddress = "127.0.0.1"
	c.StorePathRootDir = store
	c.NamesrvAddr = namesrvAddr
	c.SendMessageThreadPoolNums, c.PullMessageThreadPoolNums, c.AdminBrokerThreadPoolNums = 2, 2, 2
	return c
}

// startBroker builds and starts a broker of cfg, shut down at cleanup
// (30 s at most; a failed shutdown is logged).
func startBroker(t *testing.T, cfg *config.Config, log *slog.Logger, opts ...Option) *Broker {
	t.Helper()
	b, err := New(cfg, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, b, 30*time.Second, t.Logf)
	return b
}

// invoker returns a function that sends a request to b and waits for the
// answer (3 s at most); its client is closed at cleanup.
func invoker(t *testing.T, b *Broker) func(c int32, ext map[string]string, body []byte) *remoting.Command {
	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	return func(c int32, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := client.Invoke(ctx, b.Addr(), remoting.NewRequest(c, ext, body))
		if err != nil {
			t.Fatalf("invoke %d: %v", c, err)
		}
		return resp
	}
}

func TestBrokerEndToEnd(t *testing.T) {
	ns := fakens.Start(t)
	store := t.TempDir()
	b, err := New(testConfig(t, store, ns.Addr()), nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	shut := false
	defer func() {
		if !shut {
			_ = b.Shutdown(context.Background())
		}
	}()
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") || b.Port() == 0 {
		t.Fatalf("Addr %q", b.Addr())
	}
	first := ns.WaitRegister(t, 3*time.Second)
	if ext := ns.Registrations()[0].Ext; ext["brokerAddr"] != b.Addr() || ext["brokerName"] != "broker-a" {
		t.Errorf("registered as %v", ext)
	}
	if _, ok := first.Body.TopicConfigSerializeWrapper.TopicConfigTable["TBW102"]; !ok {
		t.Error("TBW102 not registered")
	}

	invoke := invoker(t, b)

	// Create a topic over the wire: the nameserver hears about it at once.
	resp := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": "Orders", "readQueueNums": "4", "writeQueueNums": "4",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "defaultTopic": "TBW102"}, nil)
	if resp.Code != code.Success {
		t.Fatalf("create: %d %s", resp.Code, resp.Remark)
	}
	reg := ns.WaitRegister(t, 3*time.Second).Body
	if tc, ok := reg.TopicConfigSerializeWrapper.TopicConfigTable["Orders"]; !ok || tc.WriteQueueNums != 4 {
		t.Errorf("re-registration lacks Orders: %+v", tc)
	}
	if !reg.TopicConfigSerializeWrapper.DataVersion.Equal(b.Topics().DataVersion()) {
		t.Error("registered dataVersion differs from the table's")
	}

	if r := invoke(code.GetTopicConfig, map[string]string{"topic": "Orders", "lo": "true"}, nil); r.Code != 0 || !strings.Contains(string(r.Body), `"topicName":"Orders"`) {
		t.Errorf("351: %d %s", r.Code, r.Body)
	}
	if r := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil); r.Code != code.InvalidParameter {
		t.Errorf("system topic: %d", r.Code)
	}
	if r := invoke(9999, map[string]string{"topic": "Orders"}, nil); r.Code != code.RequestCodeNotSupported {
		t.Errorf("unregistered code: %d, want 3", r.Code)
	}

	// Wiping WRITE from the broker re-registers with masked perms.
	if r := invoke(code.UpdateBrokerConfig, nil, []byte("brokerPermission=4\n")); r.Code != 0 {
		t.Fatalf("update config: %d %s", r.Code, r.Remark)
	}
	// Registrations already queued (the debounced one after the topic
	// change) may arrive first: wait for the one that carries the change.
	for i := 0; i < 5; i++ {
		reg = ns.WaitRegister(t, 3*time.Second).Body
		if reg.TopicConfigSerializeWrapper.TopicConfigTable["Orders"].Perm == protocol.PermRead {
			break
		}
	}
	if p := reg.TopicConfigSerializeWrapper.TopicConfigTable["Orders"].Perm; p != protocol.PermRead {
		t.Errorf("registered perm %d, want 4 (6 & brokerPermission)", p)
	}
	if r := invoke(code.UpdateBrokerConfig, nil, []byte("brokerName=b2\n")); r.Code != code.NoPermission {
		t.Errorf("read-only key: %d", r.Code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	shut = true
	if un := ns.Unregistrations(); len(un) != 1 || un[0]["brokerAddr"] != b.Addr() {
		t.Errorf("unregistrations %v", un)
	}

	// A new broker on the same store keeps the topic and the runtime config.
	res, err := config.Load(config.Source{Host: config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()},
		Overrides: map[string]string{"storePathRootDir": store, "listenPort": "0", "bindAddress": "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.BrokerPermission != 4 {
		t.Errorf("runtime change not persisted: brokerPermission %d", res.Config.BrokerPermission)
	}
	b2, err := New(res.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Shutdown(context.Background())
	if tc, ok := b2.Topics().Get("Orders"); !ok || tc.ReadQueueNums != 4 {
		t.Errorf("Orders after restart: %+v %v", tc, ok)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := testConfig(t, t.TempDir(), "")
	c.BrokerRole = "LEADER"
	if _, err := New(c, nil); err == nil || !strings.Contains(err.Error(), "brokerRole") {
		t.Errorf("New = %v", err)
	}
}
