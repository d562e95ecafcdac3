package command

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Golden files testdata/ctl_*.golden are the stdout of the Java mqadmin
// (rocketmq-tools 5.5.0, -Duser.timezone=UTC) for the replication and
// controller commands against admintest.NewControllerSample, served on the
// sample's fixed ports (controllers 19878, 19879), the cases in this
// order. Regenerate with
//
//	RMQ_JAVA_GOLDEN=1 go test ./command -run TestCaptureJavaControllerGolden

const (
	ctl1 = admintest.SampleController1
	ctl2 = admintest.SampleController2
)

// controllerGoldenCases run in sequence against one sample: later cases
// see the changes of earlier ones.
func controllerGoldenCases() []caGoldenCase {
	return []caGoldenCase{
		{"getControllerMetaData", []string{"getControllerMetaData", "-a", ctl2}},
		{"getSyncStateSet_b", []string{"getSyncStateSet", "-a", ctl2 + ";" + ctl1, "-b", "broker-a"}},
		{"getSyncStateSet_c", []string{"getSyncStateSet", "-a", ctl1, "-c", "DefaultCluster"}},
		{"getBrokerEpoch_b", []string{"getBrokerEpoch", "-b", "broker-a"}},
		{"getBrokerEpoch_c", []string{"getBrokerEpoch", "-c", "DefaultCluster"}},
		{"haStatus_master", []string{"haStatus", "-b", admintest.SampleBrokerA0}},
		{"haStatus_slave", []string{"haStatus", "-b", admintest.SampleBrokerA1}},
		{"haStatus_c", []string{"haStatus", "-c", "DefaultCluster"}},
		{"getControllerConfig", []string{"getControllerConfig", "-a", ctl1 + ";" + ctl2}},
		{"updateControllerConfig", []string{"updateControllerConfig", "-a", ctl1 + ";" + ctl2, "-k", "enableElectUncleanMaster", "-v", "true"}},
		{"getControllerConfig_after", []string{"getControllerConfig", "-a", ctl2}},
		{"electMaster", []string{"electMaster", "-a", ctl2, "-c", "DefaultCluster", "-bn", "broker-a", "-b", "2"}},
		{"getSyncStateSet_elected", []string{"getSyncStateSet", "-a", ctl1, "-b", "broker-a"}},
		{"cleanBrokerMetadata", []string{"cleanBrokerMetadata", "-a", ctl2, "-bn", "broker-a", "-c", "DefaultCluster", "-b", "3"}},
		{"cleanBrokerMetadata_l", []string{"cleanBrokerMetadata", "-a", ctl1, "-bn", "broker-b", "-l"}},
		{"getSyncStateSet_cleaned", []string{"getSyncStateSet", "-a", ctl1, "-c", "DefaultCluster"}},
	}
}

func ctlGolden() goldenSuite {
	return goldenSuite{"ctl", "TestCaptureJavaControllerGolden", controllerSample, controllerGoldenCases}
}

func ctlGoldenPath(name string) string { return ctlGolden().path(name) }

func controllerSample() *admintest.Cluster {
	fc, _ := admintest.NewControllerSample()
	return fc
}

func TestControllerGolden(t *testing.T) { ctlGolden().run(t) }

// TestCaptureJavaControllerGolden regenerates the ctl_ golden files
// (opt-in; needs java and Maven, and the sample's fixed ports free).
func TestCaptureJavaControllerGolden(t *testing.T) {
	requireCapture(t)
	fc := controllerSample()
	serveSample(t, fc)
	for _, addr := range []string{ctl1, ctl2} {
		serveFake(t, addr, fc.Handler)
	}
	captureGoldenCases(t, controllerGoldenCases(), ctlGoldenPath)
}

// TestControllerCommandErrors: refusals by the controller or a broker
// exit 1 and name the response code; bad command lines exit 2 without a
// request.
func TestControllerCommandErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		setup  func(fc *admintest.Cluster, cs *admintest.Controllers)
		exit   int
		stderr string
	}{
		{"elect current master", []string{"electMaster", "-a", ctl1, "-c", "DefaultCluster", "-bn", "broker-a", "-b", "1"}, nil,
			ExitError, "CONTROLLER_MASTER_STILL_EXIST (code 2011)"},
		{"elect dead replica", []string{"electMaster", "-a", ctl1, "-c", "DefaultCluster", "-bn", "broker-a", "-b", "3"}, nil,
			ExitError, "CONTROLLER_ELECT_MASTER_FAILED (code 2012)"},
		{"not leader", []string{"getSyncStateSet", "-a", ctl2, "-b", "broker-a"},
			staleLeaderView, // n1 names n0, which lost the lead to n1
			ExitError, "CONTROLLER_NOT_LEADER (code 2007)"},
		{"no leader", []string{"getSyncStateSet", "-a", ctl1, "-b", "broker-a"},
			func(_ *admintest.Cluster, cs *admintest.Controllers) { cs.Leader = "" }, ExitError, "knows no leader"},
		{"unknown server", []string{"getControllerMetaData", "-a", "127.0.0.1:1"}, nil, ExitError, "no such server"},
		{"clean alive", []string{"cleanBrokerMetadata", "-a", ctl1, "-bn", "broker-a", "-c", "DefaultCluster", "-b", "2"}, nil,
			ExitError, "CONTROLLER_INVALID_CLEAN_BROKER_METADATA (code 2009)"},
		{"clean without cluster", []string{"cleanBrokerMetadata", "-a", ctl1, "-bn", "broker-a"}, nil,
			ExitUsage, "clusterName option can not be empty"},
		{"clean bad ids", []string{"cleanBrokerMetadata", "-a", ctl1, "-bn", "broker-a", "-l", "-b", "1;x"}, nil,
			ExitUsage, "according to the format"},
		{"black-listed key", []string{"updateControllerConfig", "-a", ctl1 + ";" + ctl2, "-k", "configStorePath", "-v", "/x"}, nil,
			ExitError, "NO_PERMISSION (code 16)"},
		{"bad broker id", []string{"electMaster", "-a", ctl1, "-c", "C", "-bn", "broker-a", "-b", "x"}, nil, ExitUsage, "invalid brokerId"},
		{"not controller mode", []string{"getBrokerEpoch", "-b", "broker-b"},
			func(_ *admintest.Cluster, cs *admintest.Controllers) { delete(cs.Epochs, admintest.SampleBrokerB0) }, ExitError, "SYSTEM_ERROR (code 1)"},
		{"bad body", []string{"haStatus", "-b", admintest.SampleBrokerA0},
			func(_ *admintest.Cluster, cs *admintest.Controllers) { cs.RawBody[code.GetBrokerHAStatus] = "{oops" }, ExitError, "decode body"},
		{"no broker or cluster", []string{"haStatus"}, nil, ExitUsage, "brokerAddr clusterName"},
		{"missing -a", []string{"getSyncStateSet", "-b", "broker-a"}, nil, ExitUsage, "controllerAddress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc, cs := admintest.NewControllerSample()
			if tc.setup != nil {
				tc.setup(fc, cs)
			}
			var out, errb bytes.Buffer
			args := append(append([]string{}, tc.args...), "-n", sampleNS)
			if got := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); got != tc.exit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.exit, out.String(), errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr %q does not mention %q", errb.String(), tc.stderr)
			}
			if tc.exit == ExitUsage && len(fc.Calls()) != 0 {
				t.Errorf("usage error sent %v", fc.CallCodes())
			}
		})
	}
}

// staleLeaderView makes n1 the leader while its metadata answer still
// names n0.
func staleLeaderView(fc *admintest.Cluster, cs *admintest.Controllers) {
	cs.Leader = "n1"
	prev := fc.Override
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		resp, ok := prev(addr, req)
		if ok && req.Code == code.ControllerGetMetadataInfo {
			resp.ExtFields["controllerLeaderId"], resp.ExtFields["controllerLeaderAddress"] = "n0", ctl1
		}
		return resp, ok
	}
}

// TestControllerCommandsJSON: --output json carries what the text hides
// (the members of an election) and decodes as JSON.
func TestControllerCommandsJSON(t *testing.T) {
	fc := controllerSample()
	for _, tc := range []struct {
		args  []string
		check func(m map[string]any) bool
	}{
		{[]string{"getControllerMetaData", "-a", ctl1}, func(m map[string]any) bool {
			return m["isLeader"] == true && len(m["peers"].([]any)) == 2
		}},
		{[]string{"getSyncStateSet", "-a", ctl1, "-c", "DefaultCluster"}, func(m map[string]any) bool {
			return len(m["replicasInfoTable"].(map[string]any)) == 2
		}},
		{[]string{"getControllerConfig", "-a", ctl1}, func(m map[string]any) bool { return len(m["controllers"].([]any)) == 1 }},
		{[]string{"getBrokerEpoch", "-c", "DefaultCluster"}, func(m map[string]any) bool { return len(m["brokers"].([]any)) == 3 }},
		{[]string{"haStatus", "-c", "DefaultCluster"}, func(m map[string]any) bool { return len(m["brokers"].([]any)) == 2 }},
		{[]string{"electMaster", "-a", ctl1, "-c", "DefaultCluster", "-bn", "broker-a", "-b", "2"}, func(m map[string]any) bool {
			body, _ := m["body"].(map[string]any)
			group, _ := body["brokerMemberGroup"].(map[string]any)
			return m["masterBrokerId"] == float64(2) && len(group["brokerAddrs"].(map[string]any)) == 3
		}},
	} {
		var out, errb bytes.Buffer
		args := append(append([]string{}, tc.args...), "-n", sampleNS, "--output", "json")
		if code := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil || !tc.check(m) {
			t.Errorf("%v: %v\n%s", tc.args, err, out.String())
		}
	}
}

// TestHAStatusInterval: -i repeats until the context ends; a failing
// round is reported and the loop goes on.
func TestHAStatusInterval(t *testing.T) {
	fc, _ := admintest.NewControllerSample()
	calls := 0
	prev := fc.Override
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code == code.GetBrokerHAStatus {
			calls++
			if calls == 2 {
				return remoting.NewResponse(req, code.SystemError, "flaky"), true
			}
		}
		return prev(addr, req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	args := []string{"haStatus", "-b", admintest.SampleBrokerA1, "-i", "1", "-n", sampleNS}
	if code := Main(ctx, args, fakeEnv(fc, &out, &errb)); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "#MasterAddr"); n != 2 {
		t.Errorf("%d reports in 2.5 s at 1 s with one failure, want 2:\n%s", n, out.String())
	}
	if !strings.Contains(errb.String(), "flaky") {
		t.Errorf("stderr %q", errb.String())
	}
}

// TestControllerOverTCP runs the controller commands with the real admin
// client against a fake controller group served by remoting servers: the
// leader lookup, header fields and bodies cross a real connection.
func TestControllerOverTCP(t *testing.T) {
	fc := admintest.New()
	n0 := serveFake(t, "127.0.0.1:0", fc.Handler)
	n1 := serveFake(t, "127.0.0.1:0", fc.Handler)
	var cs *admintest.Controllers
	fc.Lock(func() {
		cs = admintest.AttachControllers(fc, "G", admintest.ControllerNode{ID: "n0", Addr: n0}, admintest.ControllerNode{ID: "n1", Addr: n1})
		cs.Sets["broker-a"] = &admintest.ReplicaSet{
			Cluster:  "C",
			Replicas: map[int64]admintest.Replica{1: {Addr: "10.0.0.1:10911", Alive: true}, 2: {Addr: "10.0.0.2:10911", Alive: true}},
			Master:   1, MasterEpoch: 1, SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 2,
		}
	})
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Location: time.UTC} // real admin.New
		if code := Main(context.Background(), args, env); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if out := run("getControllerMetaData", "-a", n1); !strings.Contains(out, "#ControllerLeaderAddress\t"+n0+"\n#Peer:\tn0:"+n0+"\n#Peer:\tn1:"+n1+"\n") {
		t.Fatalf("metadata:\n%s", out)
	}
	if out := run("electMaster", "-a", n1, "-c", "C", "-bn", "broker-a", "-b", "2"); !strings.Contains(out, "#BrokerMasterAddr\t10.0.0.2:10911\n#MasterEpoch\t2\n#SyncStateSetEpoch\t3\n") {
		t.Fatalf("electMaster:\n%s", out)
	}
	out := run("getSyncStateSet", "-a", n1, "-b", "broker-a")
	if !strings.Contains(out, "#MasterBrokerId\t2\n") || !strings.Contains(out, "NotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='10.0.0.1:10911', alive=true}") {
		t.Fatalf("getSyncStateSet:\n%s", out)
	}
	if out := run("updateControllerConfig", "-a", n0+";"+n1, "-k", "notifyBrokerRoleChanged", "-v", "false"); !strings.HasPrefix(out, "update controller config success!["+n0+", "+n1+"]") {
		t.Fatalf("update:\n%s", out)
	}
	if out := run("getControllerConfig", "-a", n1); !strings.Contains(out, "notifyBrokerRoleChanged                           =  false\n") {
		t.Fatalf("config:\n%s", out)
	}
}
