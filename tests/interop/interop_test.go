package interop

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/interop/checkmsg"
)

// TestApacheReferenceInterop proves the check programs against the
// reference Apache RocketMQ 5.5.0 cluster: every client round-trips 1000
// messages, and every client consumes (and verifies exactly) what each
// other client produced. The same checks are what the end-to-end tests run
// against our broker.
//
// It needs RMQ_APACHE_TESTS=1 (and no -short): starting the JVMs and
// running the checks takes about a minute and ~1.5 GiB of memory, which CI
// does not spend on every run.
func TestApacheReferenceInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test starts a real Apache RocketMQ nameserver and broker (two JVMs, ~15 s) " +
			"and runs the Java, Node and Go client checks against it (~1 min)")
	}
	if os.Getenv(EnvApacheTests) != "1" {
		t.Skipf("set %s=1 to run it: it starts a real Apache RocketMQ 5.5.0 cluster (~15 s, ~1.5 GiB) "+
			"and proves the Java/Node/Go check programs against it (~1 min)", EnvApacheTests)
	}
	t0 := time.Now()
	apache := StartApacheWith(t, ApacheOptions{})
	addr := apache.NamesrvAddr
	const count = "1000"

	// Our own SDK (pkg/client): basic producer and push consumer.
	t.Run("sdk/roundtrip", func(t *testing.T) { sdkRoundTrip(t, apache, 1000) })

	// Each client on its own: produce 1000 messages (16 B .. 64 KiB bodies,
	// two tags, keys, user properties), then consume and verify them.
	t.Run("java/roundtrip", func(t *testing.T) {
		r := RunJavaCheck(t, "roundtrip", "-n", addr, "-t", "InteropJava", "-count", count)
		r.RequireOK(t)
		if r.ClientVersionCode != 513 {
			t.Errorf("Java client version code %d, want 513 (V5_5_0)", r.ClientVersionCode)
		}
	})
	t.Run("go/roundtrip", func(t *testing.T) {
		// Async sends, and two consumer groups that must each get everything.
		RunGoCheck(t, "roundtrip", "-n", addr, "-t", "InteropGo", "-count", count,
			"-send-mode", "async", "-groups", "2").RequireOK(t)
	})
	t.Run("node/roundtrip", func(t *testing.T) {
		RunNodeCheck(t, "roundtrip", "-n", addr, "-t", "InteropNode", "-count", count).RequireOK(t)
	})

	// Cross-client: what one client produced, the other two consume and
	// verify byte for byte (each in a new consumer group, from the first
	// offset, counting only this run's messages).
	RunCrossChecks(t, addr, "InteropFrom", count)
	t.Logf("interop: whole Apache reference run took %v", time.Since(t0).Round(time.Second))
}

func TestResultParsing(t *testing.T) {
	line := `{"client":"java","client_version":"V5_5_0","client_version_code":513,"mode":"roundtrip",` +
		`"namesrv":"127.0.0.1:9876","topic":"T","group":"g","run":"r1","send_mode":"sync","sent":10,` +
		`"failed":0,"send_ms":5,"send_per_sec":2000,"expected":10,"received":11,"distinct":10,` +
		`"duplicates":1,"mismatched":0,"foreign":0,"consume_ms":7,"consume_per_sec":1428,"total_ms":20,` +
		`"ok":false,"errors":["consume: 1 duplicates"]}`
	var r Result
	r.Line = lastLine("some log line\n" + line + "\n\n")
	if r.Line != line {
		t.Fatalf("lastLine = %q", r.Line)
	}
	if err := json.Unmarshal([]byte(r.Line), &r.Result); err != nil {
		t.Fatal(err)
	}
	want := checkmsg.Result{Client: "java", ClientVersion: "V5_5_0", ClientVersionCode: 513, Mode: "roundtrip",
		Namesrv: "127.0.0.1:9876", Topic: "T", Group: "g", Run: "r1", SendMode: "sync", Sent: 10, SendMs: 5,
		SendPerSec: 2000, Expected: 10, Consumed: checkmsg.Consumed{Received: 11, Distinct: 10, Duplicates: 1, ConsumeMs: 7},
		ConsumePerSec: 1428, TotalMs: 20, Errors: []string{"consume: 1 duplicates"}}
	got := r.Result
	if got.Client != want.Client || got.ClientVersionCode != want.ClientVersionCode || got.Sent != want.Sent ||
		got.Distinct != want.Distinct || got.Duplicates != want.Duplicates || got.OK || len(got.Errors) != 1 {
		t.Errorf("parsed %+v, want %+v", got, want)
	}
	s := r.Summary()
	for _, part := range []string{"java roundtrip ok=false", "sync sent 10", "consumed 10/10", "duplicates 1"} {
		if !strings.Contains(s, part) {
			t.Errorf("Summary() = %q, missing %q", s, part)
		}
	}
}

// TestGoCheckUsage builds gocheck and checks that bad usage exits 2 without
// a result line; it needs no cluster.
func TestGoCheckUsage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds tests/cmd/gocheck")
	}
	bin := GoCheckBinary(t)
	for _, args := range [][]string{{}, {"bogus"}, {"produce", "-send-mode", "carrier-pigeon"}, {"consume", "-count", "x"}} {
		stdout, _, code, _ := run(time.Minute, nil, bin, args...)
		if code != 2 || strings.TrimSpace(stdout) != "" {
			t.Errorf("gocheck %v: exit %d, stdout %q; want exit 2 and no output", args, code, stdout)
		}
	}
	if _, _, code, _ := run(time.Minute, nil, bin, "-h"); code != 0 {
		t.Errorf("gocheck -h: exit %d, want 0", code)
	}
}
