// Package configtest builds the broker configuration of unit tests.
package configtest

import (
	"testing"

	"github.com/rmqgo/rmq/broker/config"
)

// New is the configuration of a test broker: config.Default for broker-a
// on 127.0.0.1 with its home in a temporary directory, changed by each of
// mutate in turn (nil ones are skipped), then finalized.
func New(t testing.TB, mutate ...func(*config.Config)) *config.Config {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	for _, m := range mutate {
		if m != nil {
			m(c)
		}
	}
	c.Finalize()
	return c
}

// InCluster is a mutation that names the broker's cluster.
func InCluster(name string) func(*config.Config) {
	return func(c *config.Config) { c.BrokerClusterName = name }
}
