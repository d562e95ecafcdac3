package e2e

import (
	"strings"
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// java4 selects Apache's Java client and tools 4.9.8 for the Java scripts
// (scripts/java-classpath.sh resolves RMQ_JAVA_VERSION from Maven).
var java4 = []string{"RMQ_JAVA_VERSION=4.9.8"}

// TestJava4ClientAndTools: Apache's Java client 4.9.8, as 4.x
// applications still run it, sends and consumes on our broker (bodies from
// 16 B to 70 KB, compressed ones included, each once), and 4.9.8's mqadmin
// reads the cluster: clusterList reads the runtime info's
// getTransferedTps, which Apache 5 renamed (against Apache 5 brokers the
// 4.9.8 clusterList fails with a NullPointerException), consumerProgress
// and topicRoute. Java 4.9.8's semantics: TestJava4ClientSemantics.
func TestJava4ClientAndTools(t *testing.T) {
	skipShort(t, "real processes and Java clients")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1})
	ns := c.NamesrvAddr()
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", "Java4T", "-r", "4", "-w", "4")
	interop.RunJavaCheckEnv(t, java4, "roundtrip", "-n", ns, "-t", "Java4T", "-g", "java4_cg", "-count", "300",
		"-sizes", "16,5000,70000").RequireOK(t)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"clusterList"}, []string{"#OutTPS(LOAD)", "DefaultCluster", c.Brokers()[0].Addr(), "V5_5_0"}},
		{[]string{"consumerProgress", "-g", "java4_cg"}, []string{"Java4T", "Diff Total: 0"}},
		{[]string{"topicRoute", "-t", "Java4T"}, []string{`"readQueueNums":4`}},
	} {
		out, stderr, err := harness.RunJavaMQAdminStderr(t, java4, append(tc.args, "-n", ns)...)
		if err != nil || strings.Contains(out+stderr, "Exception") {
			t.Fatalf("4.9.8 mqadmin %v: %v\n%s\nstderr:\n%s", tc.args, err, out, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("4.9.8 mqadmin %v: no %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestAuthJava4Client: the Java client 4.9.8 signing with
// AclClientRPCHook (ACL 1.0's hook, the same signature) produces and
// consumes on our broker with ACL 2.0 on as far as alice's ACL allows; a
// topic she may not publish to fails its sends.
func TestAuthJava4Client(t *testing.T) {
	skipShort(t, "starts JVMs")
	t.Parallel()
	c := startAliceCluster(t, "AuthJava4", "auth_java4_*")
	ns := c.NamesrvAddr()
	interop.RunJavaCheckEnv(t, java4, "roundtrip", "-n", ns, "-t", "AuthJava4", "-g", "auth_java4_cg", "-pg", "auth_java4_pg",
		"-count", "50", "-ak", "alice", "-sk", "alicepw").RequireOK(t)
	res := interop.RunJavaCheckEnv(t, java4, "produce", "-n", ns, "-t", "AuthJava4No", "-pg", "auth_java4_pg", "-count", "1",
		"-retries", "0", "-ak", "alice", "-sk", "alicepw")
	if res.OK || !strings.Contains(res.Line+res.Stderr, "has no permission") {
		t.Fatalf("Java 4.9.8 send to a topic alice may not publish to: ok=%v %s", res.OK, res.Line)
	}
}
