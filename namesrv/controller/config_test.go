package controller

import (
	"slices"
	"testing"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	pkgconfig "github.com/rmqgo/rmq/pkg/config"
)

// TestNoEffectKeysAreTheNameserverOnes: docs/operations.md lists the
// standalone controller's no-effect keys under the nameserver's, so they
// must be among them (the controller keys are shared; rocketmqHome is
// marked in both).
func TestNoEffectKeysAreTheNameserverOnes(t *testing.T) {
	ns := nsconfig.NoEffectKeys()
	own := pkgconfig.NoEffectKeys(Config{})
	if !slices.Contains(own, "rocketmqHome") || !slices.Contains(own, "jRaftElectionTimeoutMs") {
		t.Fatalf("controller no-effect keys %v lack rocketmqHome or jRaftElectionTimeoutMs", own)
	}
	for _, k := range own {
		if !slices.Contains(ns, k) {
			t.Errorf("%s is marked in the controller's Config but not in the nameserver's", k)
		}
	}
}
