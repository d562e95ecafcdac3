package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// ctrlNode is one nameserver process with an embedded controller.
type ctrlNode struct {
	id   string
	addr string // controller peer address (raft + remoting)
	proc *harness.Proc
}

// TestEmbeddedControllers runs three nameservers with embedded controllers
// and drives them as brokers would (docs/replication.md §3.4): leader
// discovery, id assignment, registration, heartbeats, a broker-triggered
// election, reads, then a kill -9 of the raft leader.
func TestEmbeddedControllers(t *testing.T) {
	processOnly(t, "kills controller processes")
	// Mostly waiting for raft elections: runs beside the other slow tests.
	t.Parallel()
	bin := harness.BuildBinaries(t, harness.Namesrv)
	var peers []string
	nodes := make([]*ctrlNode, 3)
	for i := range nodes {
		nodes[i] = &ctrlNode{id: fmt.Sprintf("n%d", i), addr: harness.LateAddr(t)}
		peers = append(peers, nodes[i].id+"-"+nodes[i].addr)
	}
	for _, n := range nodes {
		dir := t.TempDir()
		conf := filepath.Join(dir, "namesrv.conf")
		props := strings.Join([]string{
			"bindAddress=127.0.0.1",
			"enableControllerInNamesrv=true",
			"controllerDLegerGroup=e2e",
			"controllerDLegerPeers=" + strings.Join(peers, ";"),
			"controllerDLegerSelfId=" + n.id,
			"controllerStorePath=" + filepath.Join(dir, "controller"),
			"scanNotActiveBrokerInterval=1000",
			"scanInactiveMasterInterval=1000",
			"notifyBrokerRoleChanged=false",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		n.proc = harness.StartProcessWith(t, harness.ProcOptions{Name: "namesrv-" + n.id}, filepath.Join(bin, harness.Namesrv),
			"-c", conf, "--listen-port", strconv.Itoa(harness.LatePort(t)), "--data-dir", dir)
	}
	for _, n := range nodes {
		n.proc.WaitTCP(t, n.addr, 15*time.Second)
	}
	cli := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer cli.Close()
	invoke := func(addr string, c int32, ext map[string]string, body []byte) (*remoting.Command, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return cli.Invoke(ctx, addr, remoting.NewRequest(c, ext, body))
	}
	must := func(addr string, c int32, ext map[string]string, body []byte, want int32) *remoting.Command {
		t.Helper()
		resp, err := invoke(addr, c, ext, body)
		if err != nil {
			t.Fatalf("request %d to %s: %v", c, addr, err)
		}
		if resp.Code != want {
			t.Fatalf("request %d to %s: code %d (%s), want %d", c, addr, resp.Code, resp.Remark, want)
		}
		return resp
	}
	// findLeader asks every live node (1005) until all agree on one leader
	// that says it serves.
	findLeader := func(live []*ctrlNode, within time.Duration) *ctrlNode {
		t.Helper()
		var leader *ctrlNode
		testutil.Eventually(t, within, func() error {
			leader = nil
			for _, n := range live {
				resp, err := invoke(n.addr, code.ControllerGetMetadataInfo, nil, nil)
				if err != nil {
					return err
				}
				if resp.Ext("group") != "e2e" || !strings.HasPrefix(resp.Ext("peers"), "n0:"+nodes[0].addr+";") {
					return fmt.Errorf("metadata of %s: %v", n.id, resp.ExtFields)
				}
				id := resp.Ext("controllerLeaderId")
				var l *ctrlNode
				for _, m := range live {
					if m.id == id {
						l = m
					}
				}
				if l == nil || resp.Ext("controllerLeaderAddress") != l.addr || (leader != nil && leader != l) {
					return fmt.Errorf("%s sees leader %q at %q", n.id, id, resp.Ext("controllerLeaderAddress"))
				}
				if (n == l) != (resp.Ext("isLeader") == "true") {
					return fmt.Errorf("%s isLeader=%s", n.id, resp.Ext("isLeader"))
				}
				leader = l
			}
			return nil
		})
		return leader
	}
	leader := findLeader(nodes, 15*time.Second)

	// Two brokers of broker-a get ids 1 and 2 and register.
	const name = "broker-a"
	brokerAddr := func(id int64) string { return fmt.Sprintf("127.0.0.1:%d", 30910+id) }
	for want := int64(1); want <= 2; want++ {
		resp := must(leader.addr, code.ControllerGetNextBrokerID, map[string]string{"clusterName": "c1", "brokerName": name}, nil, code.Success)
		if resp.Ext("nextBrokerId") != strconv.FormatInt(want, 10) {
			t.Fatalf("next id %v, want %d", resp.ExtFields, want)
		}
		must(leader.addr, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c1", "brokerName": name,
			"appliedBrokerId": resp.Ext("nextBrokerId"), "registerCheckCode": brokerAddr(want) + ";1700000000000"}, nil, code.Success)
		reg := must(leader.addr, code.ControllerRegisterBroker, map[string]string{"clusterName": "c1", "brokerName": name,
			"brokerId": resp.Ext("nextBrokerId"), "brokerAddress": brokerAddr(want)}, nil, code.Success)
		if reg.Ext("masterBrokerId") != "" {
			t.Fatalf("register before any election named a master: %v", reg.ExtFields)
		}
	}
	// Heartbeats to every controller, as brokers send them.
	heartbeat := func(live []*ctrlNode, id int64) {
		t.Helper()
		for _, n := range live {
			must(n.addr, code.BrokerHeartbeat, map[string]string{"clusterName": "c1", "brokerName": name, "brokerId": strconv.FormatInt(id, 10),
				"brokerAddr": brokerAddr(id), "heartbeatTimeoutMills": "60000", "epoch": "0", "maxOffset": "0"}, nil, code.Success)
		}
	}
	heartbeat(nodes, 1)
	heartbeat(nodes, 2)
	el := must(leader.addr, code.ControllerElectMaster, map[string]string{"clusterName": "c1", "brokerName": name, "brokerId": "1"}, nil, code.Success)
	if el.Ext("masterBrokerId") != "1" || el.Ext("masterEpoch") != "1" || el.Ext("masterAddress") != brokerAddr(1) {
		t.Fatalf("election %v", el.ExtFields)
	}
	must(leader.addr, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": name, "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}), code.Success)

	checkState := func(addr string) {
		t.Helper()
		ri := must(addr, code.ControllerGetReplicaInfo, map[string]string{"brokerName": name}, nil, code.Success)
		var set protocol.SyncStateSet
		if err := protocol.Unmarshal(ri.Body, &set); err != nil || ri.Ext("masterBrokerId") != "1" || ri.Ext("masterEpoch") != "1" ||
			!slices.Equal(set.SyncStateSet, []int64{1, 2}) || set.SyncStateSetEpoch != 2 {
			t.Fatalf("replica info %v %s", ri.ExtFields, ri.Body)
		}
		sd := must(addr, code.ControllerGetSyncStateData, nil, []byte(`["`+name+`"]`), code.Success)
		var info protocol.BrokerReplicasInfo
		if err := protocol.Unmarshal(sd.Body, &info); err != nil {
			t.Fatal(err)
		}
		a := info.ReplicasInfoTable[name]
		if a.MasterBrokerID != 1 || a.MasterAddress != brokerAddr(1) || len(a.InSyncReplicas) != 2 || len(a.NotInSyncReplicas) != 0 {
			t.Fatalf("sync state data %s", sd.Body)
		}
	}
	checkState(leader.addr)

	// Wrong node, unknown broker, stale epoch.
	var follower *ctrlNode
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	must(follower.addr, code.ControllerRegisterBroker, map[string]string{"clusterName": "c1", "brokerName": name, "brokerId": "1", "brokerAddress": brokerAddr(1)}, nil, code.ControllerNotLeader)
	must(leader.addr, code.ControllerRegisterBroker, map[string]string{"clusterName": "c1", "brokerName": "broker-zz", "brokerId": "1", "brokerAddress": "x"}, nil, code.ControllerBrokerNeedToBeRegistered)
	must(leader.addr, code.ControllerGetReplicaInfo, map[string]string{"brokerName": "broker-zz"}, nil, code.ControllerBrokerMetadataNotExist)
	must(leader.addr, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": name, "masterBrokerId": "1", "masterEpoch": "0"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1}, SyncStateSetEpoch: 2}), code.ControllerFencedMasterEpoch)
	must(leader.addr, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": name, "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1}, SyncStateSetEpoch: 1}), code.ControllerFencedSyncStateSetEpoch)

	// kill -9 the raft leader: a new one serves within 5 s with the state.
	leader.proc.Kill()
	killed := time.Now()
	var live []*ctrlNode
	for _, n := range nodes {
		if n != leader {
			live = append(live, n)
		}
	}
	next := findLeader(live, 5*time.Second)
	t.Logf("new leader %s after %v", next.id, time.Since(killed))
	if next == leader {
		t.Fatal("the killed node is still the leader")
	}
	checkState(next.addr)
	// The new leader keeps serving writes: a third replica joins.
	must(next.addr, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c1", "brokerName": name,
		"appliedBrokerId": "3", "registerCheckCode": brokerAddr(3) + ";1700000000000"}, nil, code.Success)
}
