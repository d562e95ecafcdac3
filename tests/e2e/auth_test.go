package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// envAuthJava runs the longer ACL tests with the Java clients, Java
// mqadmin's user and ACL commands one by one and the Java 5.x gRPC client
// (make test-auth-java: 25-35 s each): `make test` runs the Java client,
// our mqadmin against Java's and the Node.js client (TestAuthJavaClient,
// TestAuthAdminOurs, TestAuthNodeClient), and has no room for more.
const envAuthJava = "RMQ_AUTH_JAVA"

func needAuthJava(t *testing.T) {
	t.Helper()
	if os.Getenv(envAuthJava) == "" {
		t.Skip("ACL with Java and Node.js clients: set " + envAuthJava + "=1 (make test-auth-java)")
	}
}

// testSigner signs requests as docs/protocol.md §7 describes (written here
// apart from the broker's checker, so that the two are checked against
// each other).
type testSigner struct{ ak, sk string }

func (s testSigner) BeforeRequest(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if req.IsResponse() || s.ak == "" {
		return nil
	}
	req.SetExt("AccessKey", s.ak)
	delete(req.ExtFields, "Signature")
	keys := make([]string, 0, len(req.ExtFields))
	for k := range req.ExtFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	mac := hmac.New(sha1.New, []byte(s.sk))
	for _, k := range keys {
		mac.Write([]byte(req.ExtFields[k]))
	}
	mac.Write(req.Body)
	req.SetExt("Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return nil
}

func (testSigner) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}

// signedClient is a remoting client signing as ak/sk ("" unsigned).
func signedClient(t *testing.T, ak, sk string) *remoting.Client {
	t.Helper()
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	rc.AddHook(testSigner{ak, sk})
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

func invokeExpect(t *testing.T, rc *remoting.Client, addr string, req *remoting.Command, wantCode int32, wantRemark string) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatalf("%s: %v", code.RequestName(req.Code), err)
	}
	if resp.Code != wantCode || (wantRemark != "" && resp.Remark != wantRemark) {
		t.Fatalf("%s: answer %d %q, want %d %q", code.RequestName(req.Code), resp.Code, resp.Remark, wantCode, wantRemark)
	}
	return resp
}

func sendReq(topic string) *remoting.Command {
	return remoting.NewRequest(code.SendMessageV2, map[string]string{
		"a": "auth_pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0", "i": "", "j": "0", "k": "false", "m": "false",
	}, []byte("hello"))
}

func aclReq(c int32, subject string, decision string, actions []string, resources ...string) *remoting.Command {
	var entries []protocol.PolicyEntryInfo
	for _, r := range resources {
		entries = append(entries, protocol.PolicyEntryInfo{Resource: r, Actions: actions, Decision: decision})
	}
	body := protocol.MustMarshal(protocol.AclInfo{Subject: subject, Policies: []protocol.PolicyInfo{{PolicyType: "Custom", Entries: entries}}})
	return remoting.NewRequest(c, map[string]string{"subject": subject}, body)
}

// TestAuthACL2: a broker with authentication and authorization on (ACL
// 2.0) answers unsigned, forged, unknown-user and denied requests with
// Apache 5.5.0's codes and texts on a connection that stays usable; the
// initial super user administers users and ACLs (3001–3010); Deny beats
// Allow, prefixes match, a deleted ACL entry takes effect at once, and a
// restart keeps users and ACLs. client-go signs with primitive.Credentials.
func TestAuthACL2(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error")
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"authenticationEnabled":  "true",
		"authorizationEnabled":   "true",
		"initAuthenticationUser": `{"username":"rocketmq","password":"12345678"}`,
	}})
	b := c.Masters()[0]
	addr := b.Addr()

	root, adm := rootAdmin(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, topic := range []string{"AuthT1", "AuthT2", "AuthP_ok", "AuthP_deny"} {
		if err := adm.CreateTopic(ctx, addr, protocol.TopicConfig{TopicName: topic, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, ""); err != nil {
			t.Fatalf("create %s as the super user: %v", topic, err)
		}
	}

	// Users and ACLs, by the super user.
	invokeExpect(t, root, addr, remoting.NewRequest(code.AuthCreateUser, map[string]string{"username": "alice"},
		protocol.MustMarshal(protocol.UserInfo{Password: "alicepw", UserType: "Normal"})), code.Success, "")
	invokeExpect(t, root, addr, remoting.NewRequest(code.AuthCreateUser, map[string]string{"username": "alice"},
		protocol.MustMarshal(protocol.UserInfo{Password: "alicepw"})), code.NoPermission, "The user is existed")
	pub := []string{"Pub"}
	invokeExpect(t, root, addr, aclReq(code.AuthCreateACL, "User:alice", "Allow", pub, "Topic:AuthT1", "Topic:AuthP*"), code.Success, "")
	invokeExpect(t, root, addr, aclReq(code.AuthUpdateACL, "User:alice", "Deny", pub, "Topic:AuthP_deny"), code.Success, "")

	// Authentication, on one connection that stays usable.
	anon := signedClient(t, "", "")
	invokeExpect(t, anon, addr, sendReq("AuthT1"), code.NoPermission, "username cannot be null.")
	invokeExpect(t, anon, addr, remoting.NewRequest(code.GetBrokerConfig, nil, nil), code.NoPermission, "username cannot be null.")
	forged := signedClient(t, "alice", "wrong")
	invokeExpect(t, forged, addr, sendReq("AuthT1"), code.NoPermission, "check signature failed.")
	ghost := signedClient(t, "mallory", "x")
	invokeExpect(t, ghost, addr, sendReq("AuthT1"), code.NoPermission, "User:mallory is not found.")

	// Authorization.
	alice := signedClient(t, "alice", "alicepw")
	invokeExpect(t, alice, addr, sendReq("AuthT1"), code.Success, "")
	invokeExpect(t, alice, addr, sendReq("AuthT2"), code.NoPermission, "User:alice has no permission to access Topic:AuthT2 from 127.0.0.1, no matched policies.")
	invokeExpect(t, alice, addr, sendReq("AuthP_ok"), code.Success, "")
	invokeExpect(t, alice, addr, sendReq("AuthP_deny"), code.NoPermission, "User:alice has no permission to access Topic:AuthP_deny from 127.0.0.1, the decision is deny.")
	invokeExpect(t, alice, addr, sendReq("AuthT1"), code.Success, "") // same connection, still serving
	// A normal user may not administer (Cluster Update), the super user may.
	invokeExpect(t, alice, addr, remoting.NewRequest(code.AuthCreateUser, map[string]string{"username": "eve"}, protocol.MustMarshal(protocol.UserInfo{Password: "x"})),
		code.NoPermission, "User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies.")

	// client-go with primitive.Credentials.
	n := 0
	newProducer := func(ak, sk string) rocketmq.Producer {
		n++ // client-go wants a group of its own per producer of a process
		opts := []producer.Option{producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
			producer.WithGroupName(fmt.Sprintf("auth_go_pg_%d", n)), producer.WithRetry(0), producer.WithSendMsgTimeout(5 * time.Second),
			producer.WithInstanceName(fmt.Sprintf("auth-%d", n))}
		if ak != "" {
			opts = append(opts, producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}))
		}
		p, err := rocketmq.NewProducer(opts...)
		started(t, p, err)
		t.Cleanup(func() { _ = p.Shutdown() })
		return p
	}
	goSend := func(p rocketmq.Producer, topic string) error {
		_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("go")))
		return err
	}
	pa := newProducer("alice", "alicepw")
	deadline := time.Now().Add(20 * time.Second)
	for err := goSend(pa, "AuthT1"); err != nil; err = goSend(pa, "AuthT1") {
		if time.Now().After(deadline) {
			t.Fatalf("client-go send as alice: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tc := range []struct {
		p     rocketmq.Producer
		topic string
		want  string
	}{
		{pa, "AuthT2", "User:alice has no permission to access Topic:AuthT2 from 127.0.0.1, no matched policies."},
		{pa, "AuthP_deny", "the decision is deny."},
		{newProducer("", ""), "AuthT1", "username cannot be null."},
		{newProducer("alice", "nope"), "AuthT1", "check signature failed."},
		{newProducer("mallory", "x"), "AuthT1", "User:mallory is not found."},
	} {
		err := goSend(tc.p, tc.topic)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "16") {
			t.Fatalf("client-go send to %s: %v, want code 16 %q", tc.topic, err, tc.want)
		}
	}
	if err := goSend(pa, "AuthP_ok"); err != nil {
		t.Fatalf("client-go send after refusals: %v", err)
	}

	// A deleted ACL entry takes effect at once.
	invokeExpect(t, root, addr, remoting.NewRequest(code.AuthDeleteACL, map[string]string{"subject": "User:alice", "resource": "Topic:AuthT1"}, nil), code.Success, "")
	invokeExpect(t, alice, addr, sendReq("AuthT1"), code.NoPermission, "User:alice has no permission to access Topic:AuthT1 from 127.0.0.1, no matched policies.")

	// The audit line of a refusal.
	if logs := b.Logs(); !strings.Contains(logs, "auth: request denied") || !strings.Contains(logs, "Topic:AuthT2") {
		t.Fatalf("no audit line for the refused send in the broker log")
	}

	// A restart keeps users and ACLs.
	b.Restart(t)
	alice = signedClient(t, "alice", "alicepw")
	invokeExpect(t, alice, addr, sendReq("AuthP_ok"), code.Success, "")
	invokeExpect(t, alice, addr, sendReq("AuthP_deny"), code.NoPermission, "User:alice has no permission to access Topic:AuthP_deny from 127.0.0.1, the decision is deny.")
	invokeExpect(t, alice, addr, sendReq("AuthT1"), code.NoPermission, "")
	root = signedClient(t, "rocketmq", "12345678")
	resp := invokeExpect(t, root, addr, remoting.NewRequest(code.AuthListUser, map[string]string{}, nil), code.Success, "")
	var users []protocol.UserInfo
	if err := json.Unmarshal(resp.Body, &users); err != nil || len(users) != 2 || users[0].Username != "alice" || users[1].Username != "rocketmq" || users[1].UserType != "Super" {
		t.Fatalf("users after restart: %s (%v)", resp.Body, err)
	}
}

// TestAuthJavaMQAdmin: Java mqadmin 5.5.0, signing with the credentials of
// $ROCKETMQ_HOME/conf/tools.yml (AclClientRPCHook), administers users and
// ACLs on our broker with authentication and authorization on (unsigned
// requests are refused: TestAuthACL2).
func TestAuthJavaMQAdmin(t *testing.T) {
	needAuthJava(t)
	skipShort(t, "the Java tool takes a few seconds per command")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"authenticationEnabled":  "true",
		"authorizationEnabled":   "true",
		"initAuthenticationUser": `{"username":"rocketmq","password":"12345678"}`,
	}})
	addr := c.Masters()[0].Addr()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "conf", "tools.yml"), []byte("accessKey: rocketmq\nsecretKey: 12345678\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	java := func(home string, args ...string) string {
		t.Helper()
		out, err := harness.RunJavaMQAdminEnv(t, []string{"RMQ_JAVA_OPTS=-Drocketmq.home.dir=" + home}, append(args, "-n", c.NamesrvAddr())...)
		if err != nil {
			t.Fatalf("java mqadmin %v: %v", args, err)
		}
		return out
	}
	mustContain(t, java(home, "createUser", "-b", addr, "-u", "alice", "-p", "alicepw", "-t", "Normal"), "success")
	mustContain(t, java(home, "getUser", "-b", addr, "-u", "alice"), "alice", "alicepw", "Normal", "enable")
	mustContain(t, java(home, "listUser", "-b", addr), "alice", "rocketmq", "Super")
	mustContain(t, java(home, "createAcl", "-b", addr, "-s", "User:alice", "-r", "Topic:JT1,Group:JG*", "-a", "Pub,Sub", "-d", "Allow", "-i", "127.0.0.1"), "success")
	mustContain(t, java(home, "getAcl", "-b", addr, "-s", "User:alice"), "User:alice", "Topic:JT1", "Group:JG*", "Pub", "Sub", "Allow", "127.0.0.1")
	mustContain(t, java(home, "listAcl", "-b", addr), "User:alice", "Topic:JT1")
	// Signed over ROCKETMQ binary headers too.
	out, err := harness.RunJavaMQAdminEnv(t, []string{"RMQ_JAVA_OPTS=-Drocketmq.home.dir=" + home + " -Drocketmq.serialize.type=ROCKETMQ"},
		"getUser", "-b", addr, "-u", "alice", "-n", c.NamesrvAddr())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "alice", "alicepw")

	// What the tool stored is what the broker checks.
	alice := signedClient(t, "alice", "alicepw")
	invokeExpect(t, alice, addr, sendReq("JT2"), code.NoPermission, "User:alice has no permission to access Topic:JT2 from 127.0.0.1, no matched policies.")

}

// startAliceCluster starts a broker with ACL 2.0 on (super user rocketmq)
// and topics topic and topic+"No", and gives the user alice (password
// alicepw) Pub and Sub on topic and on the groups of groupPattern.
func startAliceCluster(t *testing.T, topic, groupPattern string) framework.Cluster {
	t.Helper()
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"authenticationEnabled":  "true",
		"authorizationEnabled":   "true",
		"initAuthenticationUser": `{"username":"rocketmq","password":"12345678"}`,
	}})
	addAlice(t, c, groupPattern, topic, topic+"No")
	return c
}

// rootAdmin is a client of c signing as the super user rocketmq, and an
// admin client over it.
func rootAdmin(t *testing.T, c framework.Cluster) (*remoting.Client, *admin.Client) {
	t.Helper()
	root := signedClient(t, "rocketmq", "12345678")
	adm, err := admin.NewWithInvoker(admin.Config{NameServers: c.NamesrvAddrs()}, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return root, adm
}

// addAlice creates topics on c's master, signed as the super user
// rocketmq, and the user alice (password alicepw) with Pub and Sub on the
// first of them and on the groups of groupPattern.
func addAlice(t *testing.T, c framework.Cluster, groupPattern string, topics ...string) {
	t.Helper()
	addr := c.Masters()[0].Addr()
	root, adm := rootAdmin(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range topics {
		if err := adm.CreateTopic(ctx, addr, protocol.TopicConfig{TopicName: name, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}, ""); err != nil {
			t.Fatal(err)
		}
	}
	invokeExpect(t, root, addr, remoting.NewRequest(code.AuthCreateUser, map[string]string{"username": "alice"},
		protocol.MustMarshal(protocol.UserInfo{Password: "alicepw"})), code.Success, "")
	invokeExpect(t, root, addr, aclReq(code.AuthCreateACL, "User:alice", "Allow", []string{"Pub", "Sub"}, "Topic:"+topics[0], "Group:"+groupPattern), code.Success, "")
}

// TestAuthJavaClient: the Java client (rocketmq-client 5.5.0) signing with
// AclClientRPCHook produces and consumes on our broker with ACL 2.0 on, as
// far as alice's ACL allows: a topic she may not publish to fails its sends.
func TestAuthJavaClient(t *testing.T) {
	skipShort(t, "starts JVMs")
	t.Parallel()
	c := startAliceCluster(t, "AuthJava", "auth_java_*")
	ns := c.NamesrvAddr()
	interop.RunJavaCheck(t, "roundtrip", "-n", ns, "-t", "AuthJava", "-g", "auth_java_cg", "-pg", "auth_java_pg", "-count", "50",
		"-sizes", "16,5000", "-ak", "alice", "-sk", "alicepw").RequireOK(t)
	res := interop.RunJavaCheck(t, "produce", "-n", ns, "-t", "AuthJavaNo", "-pg", "auth_java_pg", "-count", "1", "-retries", "0",
		"-ak", "alice", "-sk", "alicepw")
	if res.OK || !strings.Contains(res.Line+res.Stderr, "has no permission") {
		t.Fatalf("Java send to a topic alice may not publish to: ok=%v %s", res.OK, res.Line)
	}
}

// TestAuthGrpcJava: the Java 5.x client (gRPC) with credentials
// (StaticSessionCredentialsProvider) sends and push-consumes through our
// gRPC endpoint with ACL 2.0 on; with a wrong secret its requests are refused ("check
// signature failed.", UNAUTHORIZED: broker/grpc_auth_test.go checks the
// status) and it cannot start.
func TestAuthGrpcJava(t *testing.T) {
	needAuthJava(t)
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	c, endpoint := startGrpcCluster(t, map[string]string{
		"authenticationEnabled":  "true",
		"authorizationEnabled":   "true",
		"initAuthenticationUser": `{"username":"rocketmq","password":"12345678"}`,
	})
	addAlice(t, c, "auth_grpc_*", "AuthGrpc")

	var res struct {
		IDs []string `json:"ids"`
	}
	java5(t).run(t, &res, "GrpcProducer", endpoint, "AuthGrpc", "2", "false", "auth", "alice", "alicepw")
	if len(res.IDs) != 2 {
		t.Fatalf("GrpcProducer sent %d messages, want 2", len(res.IDs))
	}
	// A push consumer (settings with a subscription, heartbeat, query
	// assignment, receive, ack: Group and Topic Sub) within the ACL.
	var got struct {
		Got []struct {
			ID string `json:"id"`
		} `json:"got"`
	}
	java5(t).run(t, &got, "GrpcPushConsumer", endpoint, "AuthGrpc", "auth_grpc_cg", "false", "2", "-none", "0", "alice", "alicepw")
	if len(got.Got) < 2 {
		t.Fatalf("GrpcPushConsumer got %d messages, want 2", len(got.Got))
	}

	cmd := exec.Command(filepath.Join(harness.RepoRoot(t), "scripts", "java5-client.sh"), "GrpcProducer", endpoint, "AuthGrpc", "1", "false", "x", "alice", "wrong")
	cmd.Env = append(cmd.Environ(), "RMQ_JAVA_LOG_DIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil || !strings.Contains(string(out), `"ok":false`) {
		t.Fatalf("GrpcProducer with a wrong secret: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	// The client fails its start; the broker's audit line says why.
	if logs := c.Masters()[0].Logs(); !strings.Contains(logs, `user=alice sourceIp=127.0.0.1 code=apache.rocketmq.v2.`) ||
		!strings.Contains(logs, `reason="check signature failed."`) {
		t.Fatalf("no audit line of the refused gRPC request in the broker log")
	}
}

// TestAuthSlaveCopy: with authentication on everywhere, the broker signs
// its own requests with innerClientAuthenticationCredentials: it registers
// at the nameserver, and its slave copies the master's users and ACLs
// (refused unsigned by the master: "username cannot be null.").
func TestAuthSlaveCopy(t *testing.T) {
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1, Replicas: 2, BrokerConf: map[string]string{
		"authenticationEnabled":                "true",
		"authorizationEnabled":                 "true",
		"initAuthenticationUser":               `{"username":"rocketmq","password":"12345678"}`,
		"innerClientAuthenticationCredentials": `{"accessKey":"inner","secretKey":"innerpw"}`,
		"slaveSyncCheckInterval":               "200",
		"slaveSyncFullInterval":                "1000",
	}})
	set := c.Set(framework.BrokerName(0))
	master, slave := set[0].Addr(), set[1].Addr()
	root := signedClient(t, "rocketmq", "12345678")
	invokeExpect(t, root, master, remoting.NewRequest(code.AuthCreateUser, map[string]string{"username": "alice"},
		protocol.MustMarshal(protocol.UserInfo{Password: "alicepw"})), code.Success, "")
	invokeExpect(t, root, master, aclReq(code.AuthCreateACL, "User:alice", "Allow", []string{"Pub"}, "Topic:SlaveT"), code.Success, "")
	testutil.Eventually(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := root.Invoke(ctx, slave, remoting.NewRequest(code.AuthGetACL, map[string]string{"subject": "User:alice"}, nil))
		if err != nil {
			return err
		}
		if resp.Code != code.Success || !strings.Contains(string(resp.Body), "Topic:SlaveT") {
			return fmt.Errorf("ACL on the slave: %d %q %s", resp.Code, resp.Remark, resp.Body)
		}
		return nil
	})
}

// TestAuthAdminOurs: interop.RunAuthAdminChecks against our broker — the
// same checks TestAuthAdminApache makes of Apache 5.5.0: Java mqadmin's and
// our mqadmin's createUser … copyAcl print the same, unsigned and forged
// requests are refused, the bodies round-trip, the SDK signs.
func TestAuthAdminOurs(t *testing.T) {
	t.Parallel()
	const user, password = "rocketmq", "12345678"
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"authenticationEnabled":                "true",
		"authorizationEnabled":                 "true",
		"initAuthenticationUser":               `{"username":"` + user + `","password":"` + password + `"}`,
		"innerClientAuthenticationCredentials": `{"accessKey":"` + user + `","secretKey":"` + password + `"}`,
	}})
	bin := harness.BuildBinaries(t, harness.MQAdmin)
	interop.RunAuthAdminChecks(t, interop.AuthTarget{NamesrvAddr: c.NamesrvAddr(), BrokerAddr: c.Masters()[0].Addr(), Cluster: "DefaultCluster",
		Super: credentials.Credentials{AccessKey: user, SecretKey: password}}, filepath.Join(bin, harness.MQAdmin))
}

// TestAuthNodeClient: ali-ons (Node.js) signing with its accessKey /
// secretKey (AccessKey, OnsChannel and the header fields) produces and
// consumes within alice's ACL, and is refused outside it.
func TestAuthNodeClient(t *testing.T) {
	t.Parallel()
	c := startAliceCluster(t, "AuthNode", "auth_node_*")
	ns := c.NamesrvAddr()
	interop.RunNodeCheck(t, "roundtrip", "-n", ns, "-t", "AuthNode", "-g", "auth_node_cg", "-pg", "auth_node_pg", "-count", "50",
		"-sizes", "16,5000", "-create-topic=false", "-ak", "alice", "-sk", "alicepw").RequireOK(t)
	res := interop.RunNodeCheck(t, "produce", "-n", ns, "-t", "AuthNodeNo", "-pg", "auth_node_pg", "-count", "1", "-retries", "0",
		"-create-topic=false", "-ak", "alice", "-sk", "alicepw")
	if res.OK || res.Sent != 0 {
		t.Fatalf("ali-ons send to a topic alice may not publish to: ok=%v %s\n%s", res.OK, res.Line, res.Stderr)
	}
	// ali-ons does not show the broker's remark; the audit line has it.
	if logs := c.Masters()[0].Logs(); !strings.Contains(logs, "User:alice has no permission to access Topic:AuthNodeNo from 127.0.0.1, no matched policies.") {
		t.Fatal("no audit line of the refused ali-ons send")
	}
}
