package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// EnvBinDir names an environment variable: when set, BuildBinaries builds
// nothing and returns that directory, which must already hold the binaries
// (CI can build them once for every test package).
const EnvBinDir = "RMQ_E2E_BIN_DIR"

// buildDirPrefix starts the name of the per-process build directories in
// os.TempDir().
const buildDirPrefix = "rmq-e2e-bin-"

// BuildBinaries builds the project's binaries with CGO_ENABLED=0 and returns
// the directory holding them, named Namesrv, Broker and MQAdmin:
//
//	github.com/rmqgo/rmq/namesrv/cmd/namesrv -> <dir>/namesrv
//	github.com/rmqgo/rmq/broker/cmd/broker   -> <dir>/broker
//	github.com/rmqgo/rmq/mqadmin/cmd/mqadmin -> <dir>/mqadmin
//
// With names, only those binaries are built (BuildBinaries(t, harness.Namesrv)).
// A main package that does not exist yet fails the test with a message
// saying which one and where it was expected.
//
// Each binary is built once per test process: the directory is
// $TMPDIR/rmq-e2e-bin-<pid>-<start time>, shared by all tests of the process
// (parallel ones included, under a file lock). Directories of test processes
// that are gone are removed on the next build; call Main from TestMain to
// remove this process's directory at exit. If $RMQ_E2E_BIN_DIR is set, its
// prebuilt binaries are used instead and nothing is built.
func BuildBinaries(t testing.TB, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		names = []string{Namesrv, Broker, MQAdmin}
	}
	if dir := os.Getenv(EnvBinDir); dir != "" {
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				t.Fatalf("harness: $%s=%s but %v", EnvBinDir, dir, err)
			}
		}
		return dir
	}
	root := RepoRoot(t)
	dir, err := processBuildDir()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	if err := buildInto(root, dir, names); err != nil {
		t.Fatalf("harness: BuildBinaries: %v", err)
	}
	return dir
}

// Main runs the tests and then removes the build directory BuildBinaries
// used in this process. Use it as:
//
//	func TestMain(m *testing.M) { harness.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if dir, err := processBuildDir(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// processBuildDir is this process's build directory. The start time (from
// /proc/self/stat) guards against a reused pid finding old binaries.
func processBuildDir() (string, error) {
	id := strconv.Itoa(os.Getpid())
	if st, err := os.ReadFile("/proc/self/stat"); err == nil {
		// Field 22 is starttime; the command name (field 2) may contain
		// spaces, so count from the closing parenthesis.
		if i := bytes.LastIndexByte(st, ')'); i >= 0 {
			if f := strings.Fields(string(st[i+1:])); len(f) > 19 {
				id += "-" + f[19]
			}
		}
	} else if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			id += "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
		}
	}
	return filepath.Join(os.TempDir(), buildDirPrefix+id), nil
}

// buildInto builds the named binaries that dir does not hold yet.
func buildInto(root, dir string, names []string) error {
	pkgs := mainPackages()
	for _, n := range names {
		if _, ok := pkgs[n]; !ok {
			return fmt.Errorf("unknown binary %q (known: %s, %s, %s)", n, Namesrv, Broker, MQAdmin)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pruneStaleBuildDirs(dir)

	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()

	var todo, missing []string
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			continue
		}
		todo = append(todo, n)
		rel := pkgs[n]
		if goFiles, _ := filepath.Glob(filepath.Join(root, rel, "*.go")); len(goFiles) == 0 {
			missing = append(missing, fmt.Sprintf("%s%s (expected Go files in %s)", ModulePrefix, rel, filepath.Join(root, rel)))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("main package(s) not found — they must exist before end-to-end tests can run:\n  %s",
			strings.Join(missing, "\n  "))
	}
	if len(todo) == 0 {
		return nil
	}
	sort.Strings(todo)
	// Build into a scratch folder and rename, so a binary in dir is always
	// complete.
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-o", tmp + string(os.PathSeparator)}
	for _, n := range todo {
		args = append(args, ModulePrefix+pkgs[n])
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("go toolchain not found in PATH: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, out)
	}
	for _, n := range todo {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// lockFile takes an exclusive flock on path (blocking). flock locks belong
// to the open file, so goroutines of one process exclude each other too.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %v", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// pruneStaleBuildDirs removes build directories of test processes that no
// longer exist (best effort).
func pruneStaleBuildDirs(keep string) {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, buildDirPrefix) {
			continue
		}
		path := filepath.Join(os.TempDir(), name)
		if path == keep {
			continue
		}
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, buildDirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			os.RemoveAll(path)
		}
	}
}
