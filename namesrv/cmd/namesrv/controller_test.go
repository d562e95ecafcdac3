package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestStandaloneController: `namesrv controller -c file` serves the
// controller protocol on its peer address and stops on cancel.
func TestStandaloneController(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	conf := filepath.Join(dir, "controller.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("controllerDLegerGroup=g1\ncontrollerDLegerPeers=n0-%s\ncontrollerDLegerSelfId=n0\n"+
		"controllerStorePath=%s\nconfigStorePath=%s\njRaftElectionTimeoutMs=500\n", addr, filepath.Join(dir, "store"), filepath.Join(dir, "controller.properties"))), 0o644)

	var out, errOut testutil.SyncBuffer
	cmd := newCommand(context.Background(), &out, &errOut, nil)
	cmd.SetArgs([]string{"controller", "-c", conf, "-p"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "controllerDLegerGroup=g1\n") || !strings.Contains(out.String(), "enableElectUncleanMaster=false\n") ||
		!strings.Contains(out.String(), "# accepted, no effect\njRaftElectionTimeoutMs=500\n") {
		t.Fatalf("-p output:\n%s", out.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out = testutil.SyncBuffer{}
	cmd = newCommand(ctx, &out, &errOut, nil)
	cmd.SetArgs([]string{"controller", "-c", conf})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	testutil.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(out.String(), "The Controller boot success. address "+addr) {
			return fmt.Errorf("no boot line; stdout %q stderr %q", out.String(), errOut.String())
		}
		return nil
	})
	if !strings.Contains(errOut.String(), "accepted with no effect: jRaftElectionTimeoutMs") {
		t.Errorf("no warning about jRaftElectionTimeoutMs:\n%s", errOut.String())
	}
	c := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer c.Close()
	testutil.Eventually(t, 10*time.Second, func() error {
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		resp, err := c.Invoke(rctx, addr, remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
		if err != nil {
			return err
		}
		if resp.Ext("isLeader") != "true" || resp.Ext("controllerLeaderAddress") != addr || resp.Ext("peers") != "n0:"+addr+";" {
			return fmt.Errorf("metadata %v", resp.ExtFields)
		}
		return nil
	})
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	resp, err := c.Invoke(rctx, addr, remoting.NewRequest(code.BrokerCloseChannelRequest, nil, nil))
	if err != nil || resp.Code != code.RequestCodeNotSupported {
		t.Fatalf("jRaft-internal code: %v %+v", err, resp)
	}
	if _, err := os.Stat(filepath.Join(dir, "store", "raft")); err != nil {
		t.Fatalf("raft store not under controllerStorePath: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("controller did not stop")
	}
}
