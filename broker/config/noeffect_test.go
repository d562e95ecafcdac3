package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/internal/configaudit"
	pcfg "github.com/rmqgo/rmq/pkg/config"
)

var updateDocs = flag.Bool("update", false, "rewrite the no-effect key list of docs/operations.md from the tags")

const operationsDoc = "../../docs/operations.md"

// pendingKeys would exempt keys being wired on another branch from the
// check; none are now.
var pendingKeys = map[string]bool{}

// TestNoEffectKeysUnread checks the `effect:"none"` marks against the
// broker module's code: a marked key read outside this package (or by a
// function of it the broker calls), and an unmarked key read nowhere,
// fail.
func TestNoEffectKeysUnread(t *testing.T) {
	program, own, err := configaudit.ScanProgram(func(dir string) bool { return dir == "configtest" })
	if err != nil {
		t.Fatal(err)
	}
	problems := configaudit.Check(configaudit.Audit{
		Fields:  configaudit.Fields(Config{}),
		Program: program,
		Config:  own,
		Inert: func(fn string) bool {
			switch fn {
			case "Config.Validate", "Config.Warnings", "Default":
				return true
			}
			return strings.HasPrefix(fn, "default")
		},
		Allowed: map[string][]string{
			// Shown, never acted on: a runtimeInfo line,
			// GET_BROKER_LITE_INFO's storeType field, and the thresholds
			// GET_COLD_DATA_FLOW_CTR_INFO reports (no cold reads are
			// accounted, docs/operations.md).
			"transientStorePoolEnable": {"admin/brokerinfo.go"},
			"storeType":                {"lite/liteadmin/liteadmin.go"},
			"cgColdReadThreshold":      {"admin/maintenance.go"},
			"globalColdReadThreshold":  {"admin/maintenance.go"},
		},
		Pending: pendingKeys,
	})
	configaudit.Report(t, problems)
}

// TestNoEffectKeysDocumented checks docs/operations.md's list against the
// tags; go test ./broker/config -run TestNoEffectKeysDocumented -update
// rewrites it.
func TestNoEffectKeysDocumented(t *testing.T) {
	configaudit.RequireDocFile(t, operationsDoc, "broker", NoEffectKeys(), *updateDocs)
}

// TestLoadReportsNoEffectKeysSet: only the no-effect keys the file, the
// environment or the overrides set are reported, not derived ones.
func TestLoadReportsNoEffectKeysSet(t *testing.T) {
	h := testHost(t)
	file := filepath.Join(t.TempDir(), "broker.conf")
	conf := "brokerName=broker-a\nhighSpeedMode=true\nlistenPort=10911\nTRANSIENTSTOREPOOLENABLE=true\n"
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(Source{
		File:      file,
		Environ:   []string{"BROKER_SERVER_WORKER_THREADS=4"},
		Overrides: map[string]string{"storePathRootDir": h.Home, "debugLockEnable": "true"},
		Derived:   map[string]string{"brokerConfigPath": file},
		Host:      h,
		NoOverlay: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"debugLockEnable", "highSpeedMode", "serverWorkerThreads", "transientStorePoolEnable"}
	if !slices.Equal(loaded.NoEffect, want) {
		t.Fatalf("NoEffect = %v, want %v", loaded.NoEffect, want)
	}
	if loaded.Config.BrokerConfigPath != file {
		t.Fatalf("brokerConfigPath = %q, want the derived %q", loaded.Config.BrokerConfigPath, file)
	}
	// A configuration setting only keys that take effect reports none.
	loaded, err = Load(Source{Overrides: map[string]string{"storePathRootDir": h.Home, "brokerName": "b"}, Derived: map[string]string{"brokerConfigPath": file}, Host: h, NoOverlay: true})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.NoEffect != nil {
		t.Fatalf("NoEffect = %v, want none", loaded.NoEffect)
	}
}

// TestPrintPropertiesMarksNoEffectKeys: `-p` output is Properties with a
// comment before each no-effect key, and parses to the same values.
func TestPrintPropertiesMarksNoEffectKeys(t *testing.T) {
	c := Default(testHost(t))
	out := c.PrintProperties()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var kv []string
	marked := map[string]bool{}
	for i, l := range lines {
		if l == pcfg.NoEffectComment {
			k, _, _ := strings.Cut(lines[i+1], "=")
			marked[k] = true
			continue
		}
		kv = append(kv, l)
	}
	if strings.Join(kv, "\n")+"\n" != c.Properties() {
		t.Fatal("the key=value lines of PrintProperties differ from Properties")
	}
	printed := map[string]bool{}
	for _, l := range kv {
		k, _, _ := strings.Cut(l, "=")
		printed[k] = true
	}
	shown := 0
	for _, k := range NoEffectKeys() {
		if !printed[k] {
			continue // hidden (the auth keys): never printed
		}
		shown++
		if !marked[k] {
			t.Errorf("%s is not marked", k)
		}
	}
	if len(marked) != shown {
		t.Errorf("%d keys marked, %d printed keys marked effect:\"none\"", len(marked), shown)
	}
	if !marked["highSpeedMode"] || marked["listenPort"] {
		t.Errorf("highSpeedMode marked %v, listenPort marked %v", marked["highSpeedMode"], marked["listenPort"])
	}
}
