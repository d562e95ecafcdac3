package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/internal/configaudit"
	pkgconfig "github.com/rmqgo/rmq/pkg/config"
)

var updateDocs = flag.Bool("update", false, "rewrite the no-effect key list of docs/operations.md from the tags")

const operationsDoc = "../../docs/operations.md"

// TestNoEffectKeysUnread checks the `effect:"none"` marks against the
// nameserver module's code: a marked key read outside this package (or by
// a function of it the nameserver calls), and an unmarked key read
// nowhere, fail.
func TestNoEffectKeysUnread(t *testing.T) {
	program, own, err := configaudit.ScanProgram(nil)
	if err != nil {
		t.Fatal(err)
	}
	problems := configaudit.Check(configaudit.Audit{
		Fields:  configaudit.Fields(Config{}),
		Program: program,
		Config:  own,
		Inert: func(fn string) bool {
			switch fn {
			case "Config.Validate", "ControllerKeys.Validate", "Default", "DefaultControllerKeys", "Load", "LoadKeys":
				return true
			}
			return false
		},
		Allowed: map[string][]string{
			// Copied into the embedded controller's configuration,
			// which does nothing with it either.
			"rocketmqHome": {"controller/config.go"},
		},
	})
	configaudit.Report(t, problems)
}

// TestNoEffectKeysDocumented checks docs/operations.md's list against the
// tags; go test ./namesrv/config -run TestNoEffectKeysDocumented -update
// rewrites it.
func TestNoEffectKeysDocumented(t *testing.T) {
	configaudit.RequireDocFile(t, operationsDoc, "namesrv", NoEffectKeys(), *updateDocs)
}

func TestLoadKeysNoEffectSet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "namesrv.conf")
	if err := os.WriteFile(file, []byte("listenPort=9877\nserverWorkerThreads=16\nProductEnvName=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, set, _, err := LoadKeys(Source{File: file, Environ: []string{"NAMESRV_CLUSTER_TEST=true"}, Overrides: map[string]string{"dataDir": t.TempDir()}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := NoEffectSet(set), []string{"clusterTest", "productEnvName", "serverWorkerThreads"}; !slices.Equal(got, want) {
		t.Fatalf("NoEffectSet = %v, want %v", got, want)
	}
	c := Default()
	out := c.PrintProperties()
	if !strings.Contains(out, pkgconfig.NoEffectComment+"\nserverWorkerThreads=8\n") || strings.Contains(out, pkgconfig.NoEffectComment+"\nlistenPort=") {
		t.Fatalf("-p output does not mark serverWorkerThreads alone:\n%s", out)
	}
}
