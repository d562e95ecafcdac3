package interop

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// AuthTarget is a cluster with authentication and authorization on (ACL
// 2.0) for RunAuthAdminChecks: Apache's (StartApacheAuth) or ours.
type AuthTarget struct {
	NamesrvAddr string
	BrokerAddr  string // its only broker
	Cluster     string
	// Super is a super user of the broker.
	Super credentials.Credentials
}

// superAdmin is an admin client of target signing as its super user.
func (target AuthTarget) superAdmin(t *testing.T) *admin.Client {
	t.Helper()
	cred := target.Super
	ac, err := admin.New(admin.Config{NameServers: []string{target.NamesrvAddr}, Credentials: &cred}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ac
}

// Apache's default super user, as its docs set it up.
const (
	authSuperUser     = "rocketmq"
	authSuperPassword = "12345678"
)

// ApacheAuthBrokerConf is the broker.conf of Apache 5.5.0 with the auth
// module on (authentication and authorization, the local RocksDB metadata
// providers), user and password the initial super user, which is also the
// broker's inner credentials.
func ApacheAuthBrokerConf(user, password string) string {
	return strings.Join([]string{
		"authenticationEnabled=true",
		"authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
		"authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
		`initAuthenticationUser={"username":"` + user + `","password":"` + password + `"}`,
		`innerClientAuthenticationCredentials={"accessKey":"` + user + `","secretKey":"` + password + `"}`,
		"authorizationEnabled=true",
		"authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
		"authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
	}, "\n")
}

// StartApacheAuth starts the reference Apache cluster with the auth module
// on (ApacheAuthBrokerConf, super user rocketmq / 12345678).
func StartApacheAuth(t testing.TB) AuthTarget {
	t.Helper()
	a := StartApacheWith(t, ApacheOptions{
		BrokerConfExtra: ApacheAuthBrokerConf(authSuperUser, authSuperPassword),
		// No messages: a small broker starts sooner and leaves room for
		// the parallel tests.
		Env: []string{"APACHE_BROKER_HEAP=256m", "APACHE_BROKER_DIRECT=256m", "APACHE_COMMITLOG_SIZE=" + strconv.Itoa(64<<20)},
	})
	return AuthTarget{NamesrvAddr: a.NamesrvAddr, BrokerAddr: a.BrokerAddr, Cluster: "DefaultCluster",
		Super: credentials.Credentials{AccessKey: authSuperUser, SecretKey: authSuperPassword}}
}

// authAdminCommands are the mqadmin commands RunAuthAdminChecks runs, in
// order, against broker b of cluster c; they end with the state they began
// with (every user and ACL they create is deleted).
func authAdminCommands(b, c string) [][]string {
	return [][]string{
		{"createUser", "-b", b, "-u", "alice_it", "-p", "pw-alice"},
		{"createUser", "-c", c, "-u", "bob_it", "-p", "pw-bob", "-t", "Normal"},
		{"getUser", "-b", b, "-u", "alice_it"},
		{"updateUser", "-b", b, "-u", "alice_it", "-s", "disable"},
		{"getUser", "-c", c, "-u", "alice_it"},
		{"getUser", "-b", b, "-u", "nobody_it"},
		{"listUser", "-b", b, "-f", "_it"},
		{"listUser", "-c", c, "-f", "_it"},
		{"createAcl", "-b", b, "-s", "User:alice_it", "-r", "Topic:T1,Group:G1", "-a", "Pub,Sub", "-d", "Allow"},
		{"createAcl", "-c", c, "-s", "User:bob_it", "-r", "Topic:pre*", "-a", "Pub", "-i", "127.0.0.1,10.0.0.0/8", "-d", "Deny"},
		{"updateAcl", "-b", b, "-s", "User:alice_it", "-r", "Topic:T1", "-a", "Pub", "-d", "Deny"},
		{"getAcl", "-b", b, "-s", "User:alice_it"},
		{"getAcl", "-c", c, "-s", "User:bob_it"},
		{"listAcl", "-b", b, "-s", "_it"},
		{"listAcl", "-c", c, "-s", "_it", "-r", "Topic"},
		{"copyUser", "-f", b, "-t", b, "-u", "alice_it"},
		{"copyAcl", "-f", b, "-t", b, "-s", "User:alice_it"},
		{"deleteAcl", "-b", b, "-s", "User:alice_it", "-r", "Group:G1"},
		{"getAcl", "-b", b, "-s", "User:alice_it"},
		{"deleteAcl", "-c", c, "-s", "User:bob_it"},
		{"listAcl", "-b", b, "-s", "_it"},
		{"deleteUser", "-b", b, "-u", "alice_it"},
		{"deleteUser", "-c", c, "-u", "bob_it"},
		{"listUser", "-b", b, "-f", "_it"},
	}
}

// RunAuthAdminChecks proves the ACL 2.0 administration against target:
//
//   - an unsigned request is refused with NO_PERMISSION;
//   - the Java mqadmin 5.5.0 (credentials from $ROCKETMQ_HOME/conf/tools.yml,
//     its only source) runs createUser … copyAcl (authAdminCommands), and
//     then our mqadmin (mqadminBin, credentials from -ak/-sk, --toolsConfig
//     or $ROCKETMQ_HOME) runs the same commands, each exiting 0 and printing
//     exactly what the Java tool printed;
//   - the broker's raw GET_USER / GET_ACL / LIST_* bodies decode into
//     protocol.UserInfo / AclInfo and encode back to the same bytes.
//
// Skips when Java is missing (RunJavaMQAdminBatch).
func RunAuthAdminChecks(t *testing.T, target AuthTarget, mqadminBin string) {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	toolsYML := filepath.Join(home, credentials.ToolsConfigFile)
	yml := "accessKey: " + target.Super.AccessKey + "\nsecretKey: " + target.Super.SecretKey + "\n"
	if err := os.WriteFile(toolsYML, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := []string{"-n", target.NamesrvAddr}

	// Unsigned: refused, and so is a wrong secret.
	if _, stderr, code := harness.ExecMQAdmin(t, mqadminBin, append([]string{"listUser", "-b", target.BrokerAddr}, ns...)...); code != 1 ||
		!strings.Contains(stderr, "NO_PERMISSION (code 16)") {
		t.Fatalf("unsigned listUser: exit %d, stderr %q; want 1 and NO_PERMISSION", code, stderr)
	}
	if _, stderr, code := harness.ExecMQAdmin(t, mqadminBin, append([]string{"listUser", "-b", target.BrokerAddr,
		"-ak", target.Super.AccessKey, "-sk", target.Super.SecretKey + "x"}, ns...)...); code != 1 ||
		!strings.Contains(stderr, "check signature failed") {
		t.Fatalf("listUser with a wrong secret: exit %d, stderr %q; want 1 and check signature failed", code, stderr)
	}

	// Any command signs: brokerStatus (GET_BROKER_RUNTIME_INFO) too.
	if _, stderr, code := harness.ExecMQAdmin(t, mqadminBin, append([]string{"brokerStatus", "-b", target.BrokerAddr}, ns...)...); code != 1 ||
		!strings.Contains(stderr, "NO_PERMISSION (code 16)") {
		t.Fatalf("unsigned brokerStatus: exit %d, stderr %q; want 1 and NO_PERMISSION", code, stderr)
	}
	if _, stderr, code := harness.ExecMQAdmin(t, mqadminBin, append([]string{"brokerStatus", "-b", target.BrokerAddr, "--toolsConfig", toolsYML}, ns...)...); code != 0 {
		t.Fatalf("signed brokerStatus: exit %d, stderr %q", code, stderr)
	}

	cmds := authAdminCommands(target.BrokerAddr, target.Cluster)
	javaCmds := make([][]string, len(cmds))
	for i, c := range cmds {
		javaCmds[i] = append(append([]string(nil), c...), ns...)
	}
	t0 := time.Now()
	javaOut, err := harness.RunJavaMQAdminBatch(t, []string{"ROCKETMQ_HOME=" + home}, javaCmds)
	if err != nil {
		t.Fatalf("java mqadmin: %v", err)
	}
	t.Logf("java mqadmin: %d commands in %v", len(cmds), time.Since(t0).Round(10*time.Millisecond))
	t0 = time.Now()
	for i, c := range cmds {
		// Credentials three ways: flags, the file, ROCKETMQ_HOME.
		var args []string
		env := []string{}
		switch i % 3 {
		case 0:
			args = append(args, "-ak", target.Super.AccessKey, "-sk", target.Super.SecretKey)
		case 1:
			args = append(args, "--toolsConfig", toolsYML)
		case 2:
			env = append(env, "ROCKETMQ_HOME="+home)
		}
		args = append(append(append([]string(nil), c...), ns...), args...)
		stdout, stderr, code, err := harness.RunGroup(context.Background(), harness.MQAdminTimeout, env, mqadminBin, args...)
		if code != 0 {
			t.Fatalf("mqadmin %s: exit %d (%v)\n%s", strings.Join(args, " "), code, err, stderr)
		}
		if stdout != javaOut[i] {
			t.Errorf("mqadmin %s: stdout differs from the Java tool's\n--- ours\n%s--- java\n%s", strings.Join(c, " "), stdout, javaOut[i])
		} else {
			t.Logf("mqadmin %s: as Java's:\n%s", strings.Join(c, " "), stdout)
		}
	}

	t.Logf("our mqadmin: %d commands in %v", len(cmds), time.Since(t0).Round(10*time.Millisecond))
	checkAuthBodies(t, target)
	checkSDKCredentials(t, target)
}

// checkSDKCredentials: our SDK's producer sends with the super user's
// credentials (CommonConfig.Credentials) and is refused with
// NO_PERMISSION without them.
func checkSDKCredentials(t *testing.T, target AuthTarget) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "AuthSDK"
	cred := target.Super
	ac := target.superAdmin(t)
	defer ac.Close()
	tc := protocol.NewTopicConfig(topic)
	if err := ac.CreateTopic(ctx, target.BrokerAddr, tc, ""); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r, err := ac.GetTopicRoute(ctx, topic); err == nil && len(r.QueueDatas) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route of %s", topic)
		}
	}
	send := func(cred *client.Credentials) error {
		p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{
			NameServers: []string{target.NamesrvAddr}, Credentials: cred}, Group: "AuthSDKProducer"})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Shutdown(ctx) }()
		_, err = p.SendSync(ctx, &message.Message{Topic: topic, Body: []byte("signed")})
		return err
	}
	if err := send(&cred); err != nil {
		t.Fatalf("signed send: %v", err)
	}
	if err := send(nil); !client.IsCode(err, code.NoPermission) {
		t.Fatalf("unsigned send: %v; want NO_PERMISSION", err)
	}
}

// checkAuthBodies creates a user and an ACL through pkg/admin and checks
// that the broker's raw answers decode and encode back byte for byte.
func checkAuthBodies(t *testing.T, target AuthTarget) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ac := target.superAdmin(t)
	defer ac.Close()
	b := target.BrokerAddr
	if err := ac.CreateUser(ctx, b, protocol.UserInfo{Username: "carol_it", Password: "pw-carol"}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ac.DeleteUser(ctx, b, "carol_it"); err != nil {
			t.Error(err)
		}
	}()
	acl := protocol.NewAclInfo("User:carol_it", []string{"Topic:T", "Group:*"}, []string{"Sub", "Get"}, nil, protocol.DecisionAllow)
	if err := ac.CreateACL(ctx, b, acl); err != nil {
		t.Fatal(err)
	}
	// A second create adds to the subject's policy.
	acl = protocol.NewAclInfo("User:carol_it", []string{"Topic:U"}, []string{"Pub"}, []string{"127.0.0.1", "10.0.0.0/8"}, protocol.DecisionDeny)
	if err := ac.CreateACL(ctx, b, acl); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		code int32
		ext  map[string]string
		v    any
	}{
		{code.AuthGetUser, map[string]string{protocol.HdrUsername: "carol_it"}, &protocol.UserInfo{}},
		{code.AuthListUser, map[string]string{protocol.HdrFilter: "carol_it"}, &[]protocol.UserInfo{}},
		{code.AuthGetACL, map[string]string{protocol.HdrSubject: "User:carol_it"}, &protocol.AclInfo{}},
		{code.AuthListACL, map[string]string{protocol.HdrSubjectFilter: "carol_it"}, &[]protocol.AclInfo{}},
	} {
		resp, err := ac.Invoke(ctx, b, q.code, q.ext, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := protocol.Unmarshal(resp.Body, q.v); err != nil {
			t.Fatalf("%s body %s: %v", code.RequestName(q.code), resp.Body, err)
		}
		if again := protocol.MustMarshal(q.v); string(again) != string(resp.Body) {
			t.Errorf("%s: Apache's body\n%s\nencodes back as\n%s", code.RequestName(q.code), resp.Body, again)
		}
		t.Logf("%s: %s", code.RequestName(q.code), resp.Body)
	}
}
