package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// startGrpcCluster starts a one-broker cluster with the gRPC endpoint on,
// conf added to the broker's configuration; it returns the cluster and
// the endpoint.
func startGrpcCluster(t *testing.T, conf map[string]string) (framework.Cluster, string) {
	t.Helper()
	grpcPort := harness.LatePort(t)
	bc := map[string]string{"enableGrpcServer": "true", "grpcServerPort": strconv.Itoa(grpcPort)}
	for k, v := range conf {
		bc[k] = v
	}
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: bc})
	return c, "127.0.0.1:" + strconv.Itoa(grpcPort)
}

// clientScript is a script under scripts/ that drives a real client and
// prints a JSON result as its last stdout line, {"ok": true, ...} on
// success; exit code 3 means its runtime (java/mvn, node/npm) is missing.
type clientScript struct {
	name    string        // file under scripts/
	who     string        // the client, in skip and failure messages
	timeout time.Duration // a first run resolves Maven or installs npm packages
	env     []string
}

// run runs the script with args and decodes its result into out (nil:
// only checked); it skips t when the client's runtime is missing and fails
// it when the client reports a failure.
func (s clientScript) run(t *testing.T, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(harness.RepoRoot(t), "scripts", s.name), args...)
	cmd.Env = append(cmd.Environ(), s.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	s.result(t, args, stdout, err, stderr.String(), out)
}

// result checks a finished script (its stdout, its exit error and stderr)
// and decodes its result into out, as run.
func (s clientScript) result(t *testing.T, args []string, stdout []byte, err error, stderr string, out any) {
	t.Helper()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("%s: %s", s.who, strings.TrimSpace(stderr))
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := []byte(lines[len(lines)-1])
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal(last, &res); jerr != nil || err != nil || !res.OK {
		t.Fatalf("%s %v: %v %v %s\nstdout:\n%s\nstderr:\n%s", s.name, args, err, jerr, res.Error, stdout, stderr)
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(last, out); err != nil {
		t.Fatalf("%s %v: %v in %s", s.name, args, err, last)
	}
}

// start starts the script with args for a client that reports progress
// on stdout before its result: it returns the stdout lines as they come
// (a line the caller does not take in time is not passed on) and a wait
// that waits for the script's end and checks and decodes its result as
// run does.
func (s clientScript) start(t *testing.T, args ...string) (<-chan string, func(out any)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, filepath.Join(harness.RepoRoot(t), "scripts", s.name), args...)
	cmd.Env = append(cmd.Environ(), s.env...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	stdout := make(chan []byte, 1)
	go func() {
		defer close(lines)
		var all []byte
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			all = append(append(all, sc.Bytes()...), '\n')
			select {
			case lines <- sc.Text():
			default:
			}
		}
		stdout <- all
	}()
	return lines, func(out any) {
		t.Helper()
		all := <-stdout
		err := cmd.Wait()
		s.result(t, args, all, err, stderr.String(), out)
	}
}

// java5 runs a program of scripts/java5 (rocketmq-client-java 5.2.0)
// through scripts/java5-client.sh, its logs in a temporary directory.
func java5(t *testing.T) clientScript {
	return clientScript{name: "java5-client.sh", who: "java 5.x client", timeout: 5 * time.Minute,
		env: []string{"RMQ_JAVA_LOG_DIR=" + t.TempDir()}}
}

// python5 runs scripts/python5's client (rocketmq-python-client 5.1.2),
// which has node5's command line; a first run installs its packages. The
// client logs under $HOME/logs: HOME is a temporary directory.
func python5(t *testing.T) clientScript {
	return clientScript{name: "python5-client.sh", who: "Python 5.x client", timeout: 5 * time.Minute,
		env: []string{"HOME=" + t.TempDir()}}
}

// node5 runs scripts/node5's client (rocketmq-client-nodejs 1.0.8).
func node5() clientScript {
	return clientScript{name: "node5-client.sh", who: "Node.js 5.x client", timeout: 3 * time.Minute}
}

// rust5 runs scripts/rust5's driver (the Rust 5.x client, crate rocketmq
// 5.0.0), which has node5's command line. It skips t at once, before any
// cluster starts, when cargo is missing or the driver is not built (the
// script's check mode exits 3): a cold build takes minutes and is
// `make rust5-client`'s, not a test's.
func rust5(t *testing.T) clientScript {
	t.Helper()
	s := clientScript{name: "rust5-client.sh", who: "Rust 5.x client", timeout: 3 * time.Minute}
	s.run(t, nil, "check")
	return s
}
