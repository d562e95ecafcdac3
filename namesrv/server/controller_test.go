package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestEmbeddedController: enableControllerInNamesrv starts a controller on
// its peer address next to the nameserver port, and Shutdown stops it.
func TestEmbeddedController(t *testing.T) {
	cfg, _, peer := controllerConfig(t)
	s := startServer(t, cfg)
	if s.Controller() == nil || s.Controller().Addr() != peer {
		t.Fatalf("controller %v", s.Controller())
	}
	c := newClient(t)
	waitControllerLeader(t, c, peer)
	// The nameserver port does not answer controller requests.
	resp, err := tryInvoke(c, s.Addr(), code.ControllerGetMetadataInfo)
	if err != nil || resp.Code != code.RequestCodeNotSupported {
		t.Fatalf("controller request on the nameserver port: %v %+v", err, resp)
	}

	// A bad controller configuration keeps the nameserver from starting.
	cfg.ControllerDLegerSelfID = "n9"
	if _, err := New(cfg, nil); err == nil {
		t.Fatal("nameserver built with a controller self id outside the peers")
	}
}

// TestEmbeddedControllerTLS: tls.server.mode=enforcing applies to the
// nameserver port and to the embedded controller's shared port (remoting
// over TLS next to raft); plaintext clients are refused on both.
func TestEmbeddedControllerTLS(t *testing.T) {
	cfg, dir, peer := controllerConfig(t)
	cfg.ServerMode = "enforcing" // self-signed: tls.test.mode.enable
	cfg.ConfigFile = filepath.Join(dir, "absent.properties")
	s := startServer(t, cfg)

	ccfg := remoting.DefaultClientConfig()
	ccfg.TLS = &tls.Config{InsecureSkipVerify: true}
	secure := remoting.NewClient(ccfg, nil)
	t.Cleanup(func() { _ = secure.Close() })
	plain := newClient(t)
	waitControllerLeader(t, secure, peer)
	if resp, err := tryInvoke(secure, s.Addr(), code.GetBrokerClusterInfo); err != nil || resp.Code != code.Success {
		t.Fatalf("nameserver over TLS: %v %+v", err, resp)
	}
	for _, addr := range []string{s.Addr(), peer} {
		if _, err := tryInvoke(plain, addr, code.GetBrokerClusterInfo); err == nil {
			t.Fatalf("plaintext request served on %s", addr)
		}
	}
}

// controllerConfig is a nameserver configuration with an embedded
// controller, the single peer n0 on a free port (peer), its store in dir.
func controllerConfig(t *testing.T) (cfg nsconfig.Config, dir, peer string) {
	t.Helper()
	peer = testutil.FreeAddr(t)
	dir = t.TempDir()
	cfg = testConfig(t, dir)
	cfg.EnableControllerInNamesrv = true
	cfg.ControllerDLegerGroup = "g"
	cfg.ControllerDLegerPeers = "n0-" + peer
	cfg.ControllerDLegerSelfID = "n0"
	cfg.ControllerStorePath = filepath.Join(dir, "controller")
	return cfg, dir, peer
}

// tryInvoke sends a request of reqCode without fields, 3 s at most.
func tryInvoke(c *remoting.Client, addr string, reqCode int32) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Invoke(ctx, addr, remoting.NewRequest(reqCode, nil, nil))
}

// waitControllerLeader waits until the controller at peer says n0 leads.
func waitControllerLeader(t *testing.T, c *remoting.Client, peer string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		resp, err := tryInvoke(c, peer, code.ControllerGetMetadataInfo)
		if err != nil {
			return err
		}
		if resp.Ext("isLeader") != "true" || resp.Ext("controllerLeaderId") != "n0" {
			return fmt.Errorf("metadata %v", resp.ExtFields)
		}
		return nil
	})
}
