// Package e2e holds end-to-end tests: real nameserver and broker processes
// on loopback ports, driven by our mqadmin, the Java mqadmin and real
// clients.
package e2e

import (
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
