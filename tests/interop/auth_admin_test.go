package interop

import (
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// TestAuthAdminApache: our mqadmin's createUser … copyAcl against Apache
// RocketMQ 5.5.0 with authentication and authorization on print what the
// Java mqadmin 5.5.0 prints, signed with a super user's credentials; the
// UserInfo / AclInfo bodies are Apache's byte for byte. This proves the
// wire format the broker side serves (RunAuthAdminChecks takes our
// cluster as well).
func TestAuthAdminApache(t *testing.T) {
	requireApacheHA(t) // the same gate: -short, RMQ_APACHE_TESTS=0; parallel
	bin := harness.BuildBinaries(t, harness.MQAdmin)
	target := StartApacheAuth(t)
	RunAuthAdminChecks(t, target, bin+"/"+harness.MQAdmin)
}
