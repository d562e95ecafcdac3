package command

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
)

// TestDashboardCommand: mqadmin dashboard serves the console on the
// address it prints until its context ends, then exits 0; bad options are
// usage errors.
func TestDashboardCommand(t *testing.T) {
	fc := admintest.NewSample()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	env := fakeEnv(fc, &bytes.Buffer{}, &errb)
	env.Stdout = pw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"dashboard", "-n", sampleNS, "--listen", "127.0.0.1:0", "--sampleInterval", "50ms"}, env)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "console on http://127.0.0.1:") {
		cancel()
		t.Fatalf("first line %q: %v (stderr %s)", line, err, errb.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := strings.TrimSuffix(strings.Fields(line)[2], "/")
	resp, err := http.Get(url + "/api/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Brokers []struct{ BrokerName, Version string }
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(got.Brokers) != 4 || got.Brokers[0].BrokerName != "broker-a" || got.Brokers[0].Version != "V5_5_0" {
		t.Fatalf("cluster: %d %v %+v", resp.StatusCode, err, got)
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Fatalf("exit %d, stderr %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("dashboard did not stop with its context")
	}

	for _, args := range [][]string{
		{"dashboard", "-n", sampleNS, "--sampleInterval", "soon"},
		{"dashboard", "-n", sampleNS, "--sampleInterval", "-1s"},
	} {
		if r := runFake(t, fc, args...); r.code != ExitUsage || !strings.Contains(r.stderr, "--sampleInterval") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := runFake(t, fc, "dashboard"); r.code != ExitError || !strings.Contains(r.stderr, "NAMESRV_ADDR") {
		t.Errorf("no nameserver: %+v", r)
	}
	if r := runFake(t, fc, "dashboard", "-n", sampleNS, "--listen", "256.0.0.1:1"); r.code != ExitError {
		t.Errorf("bad listen address: %+v", r)
	}
}
