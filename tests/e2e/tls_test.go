package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/tlsconfig/tlstest"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// tlsPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, as files.
type tlsPKI struct {
	dir                  string
	ca                   *tlstest.CA
	caPath               string
	certPath, keyPath    string // the server's
	clientCert, clientKy string
	client               tls.Certificate
}

func newTLSPKI(t *testing.T) *tlsPKI {
	t.Helper()
	p := &tlsPKI{dir: t.TempDir()}
	var err error
	if p.ca, err = tlstest.NewCA("e2e CA"); err != nil {
		t.Fatal(err)
	}
	p.caPath = filepath.Join(p.dir, "ca.pem")
	if err := tlstest.WriteFile(p.caPath, p.ca.PEM); err != nil {
		t.Fatal(err)
	}
	p.certPath, p.keyPath = p.issueServer(t, "server-1")
	cp, err := p.ca.Client("e2e client")
	if err != nil {
		t.Fatal(err)
	}
	if p.clientCert, p.clientKy, err = cp.Write(p.dir, "client"); err != nil {
		t.Fatal(err)
	}
	if p.client, err = cp.TLS(); err != nil {
		t.Fatal(err)
	}
	return p
}

// issueServer writes a new server certificate named cn over the server's
// files (an operator replacing it on disk).
func (p *tlsPKI) issueServer(t *testing.T, cn string) (certPath, keyPath string) {
	t.Helper()
	sp, err := p.ca.Server(cn)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err = sp.Write(p.dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// serverConf are the tls.* keys of a server of mode with the PKI's
// certificate.
func (p *tlsPKI) serverConf(mode string, extra map[string]string) map[string]string {
	m := map[string]string{
		"tls.server.mode":      mode,
		"tls.test.mode.enable": "false",
		"tls.server.certPath":  p.certPath,
		"tls.server.keyPath":   p.keyPath,
		"tls.config.file":      filepath.Join(p.dir, "absent.properties"),
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// namesrvArgs writes conf as a nameserver file and returns its -c flag.
func namesrvArgs(t *testing.T, conf map[string]string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "namesrv.conf")
	if err := framework.WriteProps(path, conf); err != nil {
		t.Fatal(err)
	}
	return []string{"-c", path}
}

// goProducer is a started client-go producer (TLS on or off) with its own
// instance name: client-go shares one connection pool per instance.
func goProducer(t *testing.T, namesrv, name string, useTLS bool) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		producer.WithGroupName(name), producer.WithInstanceName(name), producer.WithRetry(0),
		producer.WithSendMsgTimeout(3*time.Second), producer.WithTls(useTLS))
	started(t, p, err)
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

func goSend(ctx context.Context, p rocketmq.Producer, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("over TLS?")))
	if err == nil && res.Status != primitive.SendOK {
		return fmt.Errorf("send status %d", res.Status)
	}
	return err
}

// certClient is a remoting client over TLS trusting roots that records
// the CommonName of the server certificate of each of its handshakes.
func certClient(t *testing.T, roots *x509.CertPool, cert *tls.Certificate) (*remoting.Client, *atomic.Value, *atomic.Int32) {
	t.Helper()
	var seen atomic.Value
	var handshakes atomic.Int32
	cfg := remoting.DefaultClientConfig()
	cfg.TLS = &tls.Config{RootCAs: roots, VerifyConnection: func(cs tls.ConnectionState) error {
		seen.Store(cs.PeerCertificates[0].Subject.CommonName)
		handshakes.Add(1)
		return nil
	}}
	if cert != nil {
		cfg.TLS.Certificates = []tls.Certificate{*cert}
	}
	c := remoting.NewClient(cfg, nil)
	t.Cleanup(func() { _ = c.Close() })
	return c, &seen, &handshakes
}

func clusterInfo(c *remoting.Client, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(code.GetBrokerClusterInfo, nil, nil))
	if err == nil && resp.Code != code.Success {
		return &remoting.CodeError{Code: resp.Code, Remark: resp.Remark}
	}
	return err
}

// TestTLS runs nameservers and brokers with Apache's tls.* keys and drives
// them with client-go (WithTls), our SDK and our mqadmin --tls
// (docs/operations.md "TLS").
func TestTLS(t *testing.T) {
	processOnly(t, "the tls.* keys are read by the server binaries")
	rlog.SetLogLevel("error")
	t.Parallel()
	pki := newTLSPKI(t)

	// Enforcing: TLS clients are served, plaintext ones refused; the
	// broker registers over TLS; a replaced certificate reaches new
	// connections while an old one keeps working.
	t.Run("enforcing", func(t *testing.T) {
		t.Parallel()
		conf := pki.serverConf("enforcing", nil)
		brokerConf := pki.serverConf("enforcing", map[string]string{"tls.enable": "true"})
		c := harness.StartCluster(t, harness.ClusterOptions{
			Brokers: 1, NamesrvArgs: namesrvArgs(t, conf), BrokerConf: brokerConf,
			AdminTLS: &tls.Config{RootCAs: pki.ca.Pool()},
		})
		// The Java client 5.5.0 with -Dtls.enable=true (ClientConfig's
		// useTLS default; its test mode trusts any server): produce and
		// consume, next to the other clients.
		if out, err := c.MQAdmin(t, "updateTopic", "--tls", "-c", "DefaultCluster", "-t", "TlsJava"); err != nil {
			t.Fatalf("mqadmin --tls updateTopic: %v\n%s", err, out)
		}
		t.Run("java client", func(t *testing.T) {
			t.Parallel()
			interop.RunJavaCheckEnv(t, []string{"RMQ_JAVA_OPTS=-Dtls.enable=true"},
				"roundtrip", "-n", c.NamesrvAddr, "-t", "TlsJava", "-count", "50").RequireOK(t)
		})
		t.Run("java mqadmin", javaTLSClusterList(c.NamesrvAddr))
		t.Run("clients", func(t *testing.T) {
			t.Parallel()
			// mqadmin --tls verifying the server against the CA
			// (tls.client.authServer with a trust file, Apache's keys).
			verify := filepath.Join(t.TempDir(), "tls.properties")
			if err := framework.WriteProps(verify, map[string]string{
				"tls.test.mode.enable": "false", "tls.client.authServer": "true", "tls.client.trustCertPath": pki.caPath,
			}); err != nil {
				t.Fatal(err)
			}
			if out, err := c.MQAdmin(t, "updateTopic", "--tls", "--tlsConfigFile", verify, "-c", "DefaultCluster", "-t", "TlsTopic"); err != nil {
				t.Fatalf("mqadmin --tls updateTopic: %v\n%s", err, out)
			}
			if out, err := c.MQAdmin(t, "clusterList"); err == nil {
				t.Fatalf("mqadmin without --tls served by an enforcing nameserver:\n%s", out)
			}

			ctx := context.Background()
			secure := goProducer(t, c.NamesrvAddr, "tls_enforcing_on", true)
			for i := range 4 {
				if err := goSend(ctx, secure, "TlsTopic"); err != nil {
					t.Fatalf("client-go with TLS, send %d: %v", i, err)
				}
			}
			// client-go without TLS: its route query waits out client-go's own
			// request timeout on the closed connection, so it runs meanwhile.
			plain := goProducer(t, c.NamesrvAddr, "tls_enforcing_off", false)
			plainErr := make(chan error, 1)
			go func() { plainErr <- goSend(ctx, plain, "TlsTopic") }()
			defer func() {
				if err := <-plainErr; err == nil {
					t.Error("client-go without TLS sent through an enforcing cluster")
				}
			}()

			// Our SDK with UseTLS (Java's setUseTLS semantics).
			sdk, err := client.NewProducer(client.ProducerConfig{Group: "tls_sdk_producer", CommonConfig: client.CommonConfig{
				NameServers: []string{c.NamesrvAddr}, InstanceName: "tls-sdk", UseTLS: true,
			}})
			started(t, sdk, err)
			defer func() {
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_ = sdk.Shutdown(sctx)
			}()
			for i := range 3 {
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				res, err := sdk.SendSync(sctx, &message.Message{Topic: "TlsTopic", Body: []byte("sdk over TLS")})
				cancel()
				if err != nil || res.Status != client.SendOK {
					t.Fatalf("SDK with UseTLS, send %d: %v %+v", i, err, res)
				}
			}

			// Certificate reload on the nameserver.
			ns := c.NamesrvAddrs[0]
			old, oldSeen, oldHandshakes := certClient(t, pki.ca.Pool(), nil)
			if err := clusterInfo(old, ns); err != nil {
				t.Fatal(err)
			}
			if cn := oldSeen.Load(); cn != "server-1" {
				t.Fatalf("first certificate %v", cn)
			}
			pki.issueServer(t, "server-2")
			deadline := time.Now().Add(10 * time.Second)
			for {
				fresh, seen, _ := certClient(t, pki.ca.Pool(), nil)
				err := clusterInfo(fresh, ns)
				_ = fresh.Close()
				if err == nil && seen.Load() == "server-2" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("new connections still get %v (err %v) 10s after the certificate was replaced", seen.Load(), err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := clusterInfo(old, ns); err != nil {
				t.Fatalf("connection made before the reload: %v", err)
			}
			if n := oldHandshakes.Load(); n != 1 {
				t.Fatalf("the old client handshook %d times: its connection was dropped", n)
			}
			// The broker, reloaded too, still serves client-go.
			if err := goSend(ctx, secure, "TlsTopic"); err != nil {
				t.Fatalf("client-go after the reload: %v", err)
			}
		})
	})

	// Permissive: TLS and plaintext on the same ports, self-signed
	// certificates (tls.test.mode.enable, Apache's default).
	t.Run("permissive", func(t *testing.T) {
		t.Parallel()
		conf := map[string]string{"tls.server.mode": "permissive", "tls.config.file": filepath.Join(pki.dir, "absent.properties")}
		c := harness.StartCluster(t, harness.ClusterOptions{Brokers: 1, NamesrvArgs: namesrvArgs(t, conf), BrokerConf: conf})
		if out, err := c.MQAdmin(t, "updateTopic", "-c", "DefaultCluster", "-t", "TlsTopic"); err != nil {
			t.Fatalf("mqadmin (plaintext) updateTopic: %v\n%s", err, out)
		}
		// Java's mqadmin with -Dtls.enable=true (plaintext on the same port:
		// client-go below).
		t.Run("java mqadmin", javaTLSClusterList(c.NamesrvAddr))
		// The Java client 5.5.0 without TLS (-Dtls.enable unset, ClientConfig's
		// useTLS false): plaintext on a permissive port is served.
		t.Run("java client plaintext", func(t *testing.T) {
			t.Parallel()
			interop.RunJavaCheck(t, "roundtrip", "-n", c.NamesrvAddr, "-t", "TlsTopic", "-g", "tls_permissive_java",
				"-count", "20").RequireOK(t)
		})
		// ali-ons (plaintext only: its sockets are net.connect, it has no
		// TLS option) on a permissive port.
		t.Run("ali-ons plaintext", func(t *testing.T) {
			t.Parallel()
			interop.RunNodeCheck(t, "roundtrip", "-n", c.NamesrvAddr, "-t", "TlsTopic", "-g", "tls_permissive_node",
				"-pg", "tls_permissive_node_pg", "-count", "20", "-create-topic=false").RequireOK(t)
		})
		ctx := context.Background()
		for _, useTLS := range []bool{true, false} {
			name := "tls_permissive_off"
			if useTLS {
				name = "tls_permissive_on"
			}
			p := goProducer(t, c.NamesrvAddr, name, useTLS)
			for i := range 3 {
				if err := goSend(ctx, p, "TlsTopic"); err != nil {
					t.Fatalf("client-go TLS=%v, send %d: %v", useTLS, i, err)
				}
			}
		}
	})

	// mTLS: a nameserver requiring client certificates signed by the CA.
	t.Run("mtls", func(t *testing.T) {
		t.Parallel()
		conf := pki.serverConf("enforcing", map[string]string{
			"tls.server.need.client.auth": "require", "tls.server.authClient": "true", "tls.server.trustCertPath": pki.caPath,
		})
		c := harness.StartCluster(t, harness.ClusterOptions{NamesrvArgs: namesrvArgs(t, conf)})
		ns := c.NamesrvAddrs[0]
		with, _, _ := certClient(t, pki.ca.Pool(), &pki.client)
		if err := clusterInfo(with, ns); err != nil {
			t.Fatalf("with a client certificate: %v", err)
		}
		without, _, _ := certClient(t, pki.ca.Pool(), nil)
		if err := clusterInfo(without, ns); err == nil {
			t.Fatal("served without a client certificate")
		}
		rogueCA, err := tlstest.NewCA("rogue")
		if err != nil {
			t.Fatal(err)
		}
		rp, err := rogueCA.Client("rogue")
		if err != nil {
			t.Fatal(err)
		}
		rogue, err := rp.TLS()
		if err != nil {
			t.Fatal(err)
		}
		rc, _, _ := certClient(t, pki.ca.Pool(), &rogue)
		if err := clusterInfo(rc, ns); err == nil {
			t.Fatal("served a client certificate of another CA")
		}
		// Our mqadmin with Apache's client keys in a tls.config.file.
		clientConf := filepath.Join(t.TempDir(), "tls.properties")
		if err := framework.WriteProps(clientConf, map[string]string{
			"tls.client.certPath": pki.clientCert, "tls.client.keyPath": pki.clientKy,
		}); err != nil {
			t.Fatal(err)
		}
		if out, err := c.MQAdmin(t, "clusterList", "--tls", "--tlsConfigFile", clientConf); err != nil || !strings.Contains(out, "#Cluster Name") {
			t.Fatalf("mqadmin --tls with a client certificate: %v\n%s", err, out)
		}
		if out, err := c.MQAdmin(t, "clusterList", "--tls", "--tlsConfigFile", filepath.Join(pki.dir, "absent.properties")); err == nil {
			t.Fatalf("mqadmin --tls without a client certificate was served:\n%s", out)
		}
	})
}

// javaTLSClusterList is a subtest: Java's mqadmin 5.5.0 with
// -Dtls.enable=true lists the cluster of the nameserver ns (broker-a in it).
func javaTLSClusterList(ns string) func(t *testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		out, err := harness.RunJavaMQAdminEnv(t, []string{"RMQ_JAVA_OPTS=-Dtls.enable=true"}, "clusterList", "-n", ns)
		if err != nil || !strings.Contains(out, "broker-a") {
			t.Fatalf("java mqadmin -Dtls.enable=true clusterList: %v\n%s", err, out)
		}
	}
}
