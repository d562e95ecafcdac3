package harness

import (
	"flag"
	"fmt"
	"os"
)

// Environment variables that let one `go test` command run the unit
// packages and the in-process end-to-end tests together (the Makefile's
// race-detector phase): flags given on that command line would reach every
// package, and the unit packages know neither -cluster nor the e2e test
// list.
const (
	// EnvTestCluster is the default of -cluster in tests/e2e and
	// tests/framework (process or inproc).
	EnvTestCluster = "RMQ_TEST_CLUSTER"
	// EnvTestRun is the -run pattern of tests/e2e and tests/framework when
	// the command line gives none.
	EnvTestRun = "RMQ_TEST_RUN"
)

// EnvDefault is $name, or def when it is unset or empty.
func EnvDefault(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// DefaultRun applies $RMQ_TEST_RUN as the -run pattern unless -run was
// given. Call it from TestMain after flag.Parse.
func DefaultRun() {
	pattern := os.Getenv(EnvTestRun)
	if pattern == "" {
		return
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.run" })
	if given {
		return
	}
	if err := flag.Set("test.run", pattern); err != nil {
		fmt.Fprintf(os.Stderr, "harness: $%s=%q: %v\n", EnvTestRun, pattern, err)
		os.Exit(2)
	}
}
