package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

func writeConf(t *testing.T, store string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.conf")
	conf := strings.Join([]string{
		"brokerClusterName=DefaultCluster",
		"brokerName=broker-a",
		"brokerId=0",
		"deleteWhen=04",
		"fileReservedTime=48",
		"brokerRole=ASYNC_MASTER",
		"flushDiskType=ASYNC_FLUSH",
		"storePathRootDir=" + store,
		"brokerIP1=127.0.0.1",
		"bindAddress=127.0.0.1",
		"mapedFileSizeCommitLog=1073741824",
		"colour=blue",
		"highSpeedMode=true",
		"transientStorePoolEnable=false",
	}, "\n")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrintConfig(t *testing.T) {
	conf := writeConf(t, t.TempDir())
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-c", conf, "-p", "-n", "10.0.0.1:9876;10.0.0.2:9876"}, &out, &errOut, nil, hooks{}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"brokerName=broker-a\n", "fileReservedTime=48\n", "namesrvAddr=10.0.0.1:9876;10.0.0.2:9876\n", "listenPort=10911\n",
		"brokerConfigPath=" + conf + "\n",
		// No-effect keys: a comment line before, the key=value line as is.
		"\n# accepted, no effect\nhighSpeedMode=true\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-p output lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "# accepted, no effect\nlistenPort=") {
		t.Error("-p marks listenPort")
	}
	out.Reset()
	if code := run(context.Background(), []string{"-c", conf, "-m"}, &out, &errOut, []string{"BROKER_LISTEN_PORT=12345"}, hooks{}); code != 0 {
		t.Fatal(errOut.String())
	}
	if !strings.Contains(out.String(), "listenPort=12345\n") || strings.Contains(out.String(), "popPollingSize") {
		t.Errorf("-m output:\n%s", out.String())
	}
}

func TestBadConfigExits1(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--set", "brokerRole=LEADER", "--store-path", t.TempDir()}, &out, &errOut, nil, hooks{})
	if code != 1 || !strings.Contains(errOut.String(), "brokerRole") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
	code = run(context.Background(), []string{"-n", "nonsense", "--store-path", t.TempDir()}, &out, &errOut, nil, hooks{})
	if code != 1 || !strings.Contains(errOut.String(), "Name Server Address") {
		t.Errorf("bad -n: exit %d, stderr %q", code, errOut.String())
	}
}

func TestBootAndGracefulShutdown(t *testing.T) {
	store := t.TempDir()
	conf := writeConf(t, store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.SyncBuffer
	done := make(chan int, 1)
	stopping := make(chan struct{}, 1)
	slack := make(chan time.Duration, 2)
	go func() {
		done <- run(ctx, []string{"-c", conf, "--listen-port", "0", "-n", "127.0.0.1:1", "--set", "timerSlackMicros=300"}, &out, &errOut,
			[]string{"NAMESRV_ADDR=192.0.2.1:9876"}, hooks{
				onStopping: func() { stopping <- struct{}{} },
				timerSlack: func(want time.Duration, _ []string) error {
					slack <- want
					return errors.New("no re-exec in tests")
				},
			})
	}()
	boot := regexp.MustCompile(`The broker\[broker-a, 127\.0\.0\.1:\d+\] boot success\. serializeType=JSON and name server is 127\.0\.0\.1:1`)
	testutil.Eventually(t, 10*time.Second, func() error {
		if !boot.MatchString(out.String()) {
			return fmt.Errorf("no boot message; stdout %q stderr %q", out.String(), errOut.String())
		}
		return nil
	})
	logs := errOut.String()
	// The configured slack reaches the hook once; its failure is a warning.
	if len(slack) != 1 || <-slack != 300*time.Microsecond || !strings.Contains(logs, "timer slack not applied") {
		t.Errorf("timer slack hook not called once with 300µs, or its error not logged:\n%s", logs)
	}
	if !strings.Contains(logs, "unknown config key ignored") || !strings.Contains(logs, "key=colour") {
		t.Errorf("unknown key not reported:\n%s", logs)
	}
	if !strings.Contains(logs, "key=mapedFileSizeCommitLog") {
		t.Errorf("4.x key not reported:\n%s", logs)
	}
	// One warning names the no-effect keys the file sets, and only those
	// (not brokerConfigPath, which -c implies).
	if n := strings.Count(logs, "accepted with no effect"); n != 1 || !strings.Contains(logs, `"accepted with no effect: highSpeedMode, transientStorePoolEnable"`) {
		t.Errorf("%d no-effect warnings, want one naming highSpeedMode and transientStorePoolEnable:\n%s", n, logs)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
	if len(stopping) != 1 || !strings.Contains(errOut.String(), "shutdown hook over") {
		t.Errorf("shutdown not reported: %s", errOut.String())
	}
	if _, err := os.Stat(filepath.Join(store, "config", "topics.json")); err != nil {
		t.Errorf("topics.json: %v", err)
	}
}

// TestEnvOptions: the environment settings that are not broker.conf keys
// become broker options; a bad value stops the broker before it starts.
func TestEnvOptions(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		options int
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{envLockMaxLiveTime: ""}},
		{env: map[string]string{envLockMaxLiveTime: "1500"}, options: 1},
		{env: map[string]string{envLockMaxLiveTime: "1500", envLiteExpirationUnit: "100"}, options: 2},
		{env: map[string]string{envLiteExpirationUnit: "0"}, wantErr: envLiteExpirationUnit},
		{env: map[string]string{envLockMaxLiveTime: "1s"}, wantErr: envLockMaxLiveTime},
	} {
		opts, err := envOptions(tc.env)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err %v, want one naming %s", tc.env, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case len(opts) != tc.options:
			t.Errorf("%v: %d options, want %d", tc.env, len(opts), tc.options)
		}
	}
	conf := writeConf(t, t.TempDir())
	var out, errOut bytes.Buffer
	environ := []string{envLockMaxLiveTime + "=-5"}
	if code := run(context.Background(), []string{"-c", conf}, &out, &errOut, environ, hooks{}); code != 1 || !strings.Contains(errOut.String(), envLockMaxLiveTime) {
		t.Fatalf("exit %d, stderr %q: want 1 naming %s", code, errOut.String(), envLockMaxLiveTime)
	}
}
