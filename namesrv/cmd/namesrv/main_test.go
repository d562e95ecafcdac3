package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestPrintConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "namesrv.conf")
	os.WriteFile(conf, []byte("listenPort=9999\norderMessageEnable=true\nbogusKey=1\nserverWorkerThreads=4\n"), 0o644)
	var out, errOut testutil.SyncBuffer
	cmd := newCommand(context.Background(), &out, &errOut, []string{"NAMESRV_DATA_DIR=" + dir})
	cmd.SetArgs([]string{"-c", conf, "-p"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listenPort=9999\n", "orderMessageEnable=true\n", "kvConfigPath=" + filepath.Join(dir, "kvConfig.json") + "\n",
		"\n# accepted, no effect\nserverWorkerThreads=4\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "# accepted, no effect\nlistenPort") {
		t.Errorf("-p marks listenPort:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "unknown config key") || !strings.Contains(errOut.String(), "bogusKey") {
		t.Errorf("unknown key not reported: %s", errOut.String())
	}

	out = testutil.SyncBuffer{}
	cmd = newCommand(context.Background(), &out, &errOut, nil)
	cmd.SetArgs([]string{"-m", "--listen-port", "1234", "--data-dir", dir})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "listenPort=1234\n") || strings.Contains(out.String(), "serverWorkerThreads") {
		t.Errorf("-m output:\n%s", out.String())
	}
}

func TestBadConfigFails(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "namesrv.conf")
	os.WriteFile(conf, []byte("listenPort=notaport\n"), 0o644)
	var out, errOut testutil.SyncBuffer
	cmd := newCommand(context.Background(), &out, &errOut, nil)
	cmd.SetArgs([]string{"-c", conf})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "listenPort") {
		t.Fatalf("err %v", err)
	}
	cmd = newCommand(context.Background(), &out, &errOut, nil)
	cmd.SetArgs([]string{"--log-level", "loud"})
	if err := cmd.Execute(); err == nil {
		t.Fatal("bad log level accepted")
	}
}

func TestBootServeAndGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "namesrv.conf")
	os.WriteFile(conf, []byte("bindAddress=127.0.0.1\nkvConfigPath=kv.json\nserverSelectorThreads=2\nuseEpollNativeSelector=true\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.SyncBuffer
	cmd := newCommand(ctx, &out, &errOut, nil)
	cmd.SetArgs([]string{"-c", conf, "--listen-port", "0", "--data-dir", dir})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()

	re := regexp.MustCompile(`The Name Server boot success\. serializeType=JSON, address (\S+)`)
	var addr string
	testutil.Eventually(t, 5*time.Second, func() error {
		m := re.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("no boot line; stdout %q stderr %q", out.String(), errOut.String())
		}
		addr = m[1]
		return nil
	})
	c := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer c.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	resp, err := c.Invoke(rctx, addr, remoting.NewRequest(code.PutKVConfig, map[string]string{"namespace": "n", "key": "k", "value": "v"}, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("put kv: %v %+v", err, resp)
	}
	if _, err := os.Stat(filepath.Join(dir, "kv.json")); err != nil {
		t.Fatalf("kv file not in data dir: %v", err)
	}
	if logs := errOut.String(); strings.Count(logs, "accepted with no effect") != 1 || !strings.Contains(logs, "accepted with no effect: serverSelectorThreads, useEpollNativeSelector") {
		t.Errorf("want one warning naming the no-effect keys the file sets:\n%s", logs)
	}
	cancel() // as SIGTERM would
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no graceful shutdown")
	}
}
