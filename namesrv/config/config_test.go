package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An Apache-style namesrv.conf, with one key of our own and one typo.
const apacheConf = `# namesrv.conf
listenPort=9877
kvConfigPath=kv/kvConfig.json
orderMessageEnable = true
scanNotActiveBrokerInterval=3000
serverWorkerThreads=4
deleteTopicWithBrokerRegistration=true
enableAllTopicList=false
rocketmqHome=/opt/rocketmq
listenPrt=1
`

func TestLoadApacheConf(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "namesrv.conf")
	if err := os.WriteFile(file, []byte(apacheConf), 0o644); err != nil {
		t.Fatal(err)
	}
	c, unknown, err := Load(Source{File: file, Environ: []string{"NAMESRV_ENABLE_TOPIC_LIST=false", "NAMESRV_DATA_DIR=" + dir}}, "/home/x")
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "listenprt" {
		t.Fatalf("unknown %v", unknown)
	}
	if c.ListenPort != 9877 || !c.OrderMessageEnable || c.ScanNotActiveBrokerInterval != 3*time.Second || c.ServerWorkerThreads != 4 ||
		!c.DeleteTopicWithBrokerRegistration || c.EnableAllTopicList || c.EnableTopicList || c.RocketmqHome != "/opt/rocketmq" {
		t.Fatalf("loaded %+v", c)
	}
	if c.KVConfigPath != filepath.Join(dir, "kv", "kvConfig.json") {
		t.Fatalf("kvConfigPath %s", c.KVConfigPath)
	}
	// Like Apache, the boot file is where runtime updates are written.
	if c.ConfigStorePath != file {
		t.Fatalf("configStorePath %s", c.ConfigStorePath)
	}
}

func TestDefaultsMatchApache(t *testing.T) {
	c, unknown, err := Load(Source{Environ: []string{"ROCKETMQ_HOME=/rmq"}}, "/home/u")
	if err != nil || len(unknown) != 0 {
		t.Fatal(err, unknown)
	}
	want := map[string]string{
		"listenPort": "9876", "scanNotActiveBrokerInterval": "5000", "orderMessageEnable": "false",
		"deleteTopicWithBrokerRegistration": "false", "clusterTest": "false", "enableAllTopicList": "true",
		"enableTopicList": "true", "waitSecondsForService": "45", "unRegisterBrokerQueueCapacity": "3000",
		"kvConfigPath": "/home/u/namesrv/kvConfig.json", "configStorePath": "/home/u/namesrv/namesrv.properties",
		"returnOrderTopicConfigToBroker": "true", "clientRequestThreadPoolNums": "8", "defaultThreadPoolNums": "16",
		"serverChannelMaxIdleTimeSeconds": "120", "bindAddress": "0.0.0.0", "rocketmqHome": "/rmq",
		"configBlackList": "configBlackList;configStorePath;kvConfigPath", "productEnvName": "center",
	}
	props := c.Properties()
	for k, v := range want {
		if !strings.Contains(props, "\n"+k+"="+v+"\n") && !strings.HasPrefix(props, k+"="+v+"\n") {
			t.Errorf("%s: want %s in\n%s", k, v, props)
		}
	}
	if c.ListenAddr() != "0.0.0.0:9876" || c.IdleTimeout() != 120*time.Second {
		t.Fatal(c.ListenAddr(), c.IdleTimeout())
	}
}

func TestOverridesWin(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "n.conf")
	os.WriteFile(file, []byte("listenPort=1111\n"), 0o644)
	c, _, err := Load(Source{File: file, Environ: []string{"NAMESRV_LISTEN_PORT=2222"}, Overrides: map[string]string{"listenPort": "3333", "kvConfigPath": "/abs/kv.json", "dataDir": dir}}, "/h")
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenPort != 3333 || c.KVConfigPath != "/abs/kv.json" || c.DataDir != dir {
		t.Fatalf("%+v", c)
	}
}

func TestValidation(t *testing.T) {
	for _, conf := range []string{"listenPort=70000", "scanNotActiveBrokerInterval=0", "defaultThreadPoolNums=0",
		"waitSecondsForService=-1", "enableControllerInNamesrv=true", "listenPort=abc", "orderMessageEnable=yes please"} {
		file := filepath.Join(t.TempDir(), "n.conf")
		os.WriteFile(file, []byte(conf+"\n"), 0o644)
		if _, _, err := Load(Source{File: file}, "/h"); err == nil {
			t.Errorf("%q accepted", conf)
		}
	}
	if _, _, err := Load(Source{File: "/nonexistent/n.conf"}, "/h"); err == nil {
		t.Error("missing file accepted")
	}
}

func TestBlackListAndStore(t *testing.T) {
	c := Default()
	c.ConfigBlackList = "configBlackList; orderMessageEnable"
	for _, k := range []string{"kvConfigPath", "KVCONFIGPATH", "configStorePath", "rocketmqHome", "configBlackList", "dataDir", "ordermessageenable"} {
		if !c.BlackListed(k) {
			t.Errorf("%s not black-listed", k)
		}
	}
	if c.BlackListed("listenPort") || !Known("listenPort") || Known("nope") || !Known("serverWorkerThreads") {
		t.Fatal("known/blacklist mismatch")
	}
	s := NewStore(Default())
	before := s.Get()
	next, err := s.Update(map[string]string{"enableTopicList": "false", "scanNotActiveBrokerInterval": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if next.EnableTopicList || next.ScanNotActiveBrokerInterval != time.Second || s.Get() != next {
		t.Fatalf("update %+v", next)
	}
	if !before.EnableTopicList {
		t.Fatal("old snapshot mutated")
	}
	if _, err := s.Update(map[string]string{"listenPort": "-1"}); err == nil || s.Get() != next {
		t.Fatal("invalid update installed")
	}
}

func TestPersist(t *testing.T) {
	c := Default()
	c.DataDir = t.TempDir()
	c.Resolve("")
	if err := Persist(&c); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(Source{File: c.ConfigStorePath}, "/h")
	if err != nil {
		t.Fatal(err)
	}
	if got.KVConfigPath != c.KVConfigPath || got.ListenPort != 9876 {
		t.Fatalf("round trip %+v", got)
	}
	if s := c.ImportantProperties(); !strings.Contains(s, "listenPort=9876\n") {
		t.Fatal(s)
	}
}
