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
// cluster as well: e2e TestAuthAdminOurs). Then AuthAnswers' requests get
// the same codes and remarks from our broker as from Apache.
func TestAuthAdminApache(t *testing.T) {
	requireApacheHA(t) // the same gate: -short, RMQ_APACHE_TESTS=0; parallel
	bin := harness.BuildBinaries(t, harness.MQAdmin)
	target := StartApacheAuth(t)
	RunAuthAdminChecks(t, target, bin+"/"+harness.MQAdmin)

	// Our broker answers the same requests as Apache, code and remark.
	want := AuthAnswers(t, target)
	ours := harness.StartCluster(t, harness.ClusterOptions{Brokers: 1, BrokerConf: map[string]string{
		"authenticationEnabled":                "true",
		"authorizationEnabled":                 "true",
		"initAuthenticationUser":               `{"username":"` + authSuperUser + `","password":"` + authSuperPassword + `"}`,
		"innerClientAuthenticationCredentials": `{"accessKey":"` + authSuperUser + `","secretKey":"` + authSuperPassword + `"}`,
	}})
	got := AuthAnswers(t, AuthTarget{NamesrvAddr: ours.NamesrvAddr, BrokerAddr: ours.Brokers[0].Addr, Cluster: "DefaultCluster", Super: target.Super})
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("answer %d differs\n  apache: %s\n  ours:   %s", i, want[i], got[i])
		} else {
			t.Logf("as Apache: %s", got[i])
		}
	}
}
