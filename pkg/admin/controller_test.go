package admin_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	ctl1 = admintest.SampleController1
	ctl2 = admintest.SampleController2
)

func controllerFixture(t *testing.T) (*admintest.Cluster, *admintest.Controllers, *admin.Client) {
	t.Helper()
	fc, cs := admintest.NewControllerSample()
	c, err := admin.NewWithInvoker(admin.Config{}, fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fc, cs, c
}

func TestControllerMetaData(t *testing.T) {
	_, cs, c := controllerFixture(t)
	ctx := context.Background()
	md, err := c.GetControllerMetaData(ctx, ctl2)
	if err != nil {
		t.Fatal(err)
	}
	if md.Group != "DefaultControllerGroup" || md.LeaderID != "n0" || md.LeaderAddress != ctl1 || md.IsLeader ||
		!reflect.DeepEqual(md.Peers, []string{"n0:" + ctl1, "n1:" + ctl2}) {
		t.Fatalf("metadata from n1: %+v", md)
	}
	if md, err = c.GetControllerMetaData(ctx, ctl1); err != nil || !md.IsLeader {
		t.Fatalf("metadata from n0: %+v, %v", md, err)
	}

	cs.Leader = ""
	if _, err := c.GetSyncStateData(ctx, ctl2, []string{"broker-a"}); !errors.Is(err, admin.ErrNoControllerLeader) {
		t.Fatalf("no leader: %v", err)
	}
}

// TestGetSyncStateDataGoesToLeader: the asked node only names the leader;
// the broker names travel as a JSON array; unknown names are left out.
func TestGetSyncStateDataGoesToLeader(t *testing.T) {
	fc, _, c := controllerFixture(t)
	info, err := c.GetSyncStateData(context.Background(), ctl2, []string{"broker-a", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ctl2 + ":1005", ctl1 + ":1006"}
	if got := fc.CallCodes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if body := fc.Calls()[1].Body; body != `["broker-a","nope"]` {
		t.Fatalf("request body %s", body)
	}
	ri, found := info.ReplicasInfoTable["broker-a"]
	if !found || len(info.ReplicasInfoTable) != 1 {
		t.Fatalf("table %+v", info.ReplicasInfoTable)
	}
	if ri.MasterBrokerID != 1 || ri.MasterAddress != admintest.SampleBrokerA0 || ri.MasterEpoch != 3 || ri.SyncStateSetEpoch != 5 ||
		len(ri.InSyncReplicas) != 2 || len(ri.NotInSyncReplicas) != 1 || ri.NotInSyncReplicas[0].Alive {
		t.Fatalf("broker-a %+v", ri)
	}
}

// TestControllerNotLeader: a node that is not the leader answers 2007;
// the error carries the code and its name.
func TestControllerNotLeader(t *testing.T) {
	fc, _, c := controllerFixture(t)
	prev := fc.Override
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		resp, ok := prev(addr, req)
		if ok && req.Code == code.ControllerGetMetadataInfo {
			resp.ExtFields[protocol.HdrControllerLeaderAddress] = ctl2 // stale view
		}
		return resp, ok
	}
	_, err := c.GetSyncStateData(context.Background(), ctl1, []string{"broker-a"})
	var re *admin.ResponseError
	if !errors.As(err, &re) || re.Code != code.ControllerNotLeader || re.Addr != ctl2 {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "CONTROLLER_NOT_LEADER (code 2007)") {
		t.Fatalf("message %q", err)
	}
}

func TestElectMaster(t *testing.T) {
	fc, cs, c := controllerFixture(t)
	ctx := context.Background()

	r, err := c.ElectMaster(ctx, ctl2, "DefaultCluster", "broker-a", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.MasterBrokerID != 2 || r.MasterAddress != admintest.SampleBrokerA1 || r.MasterEpoch != 4 || r.SyncStateSetEpoch != 6 {
		t.Fatalf("result %+v", r)
	}
	if r.Body == nil || r.Body.BrokerMemberGroup == nil || len(r.Body.BrokerMemberGroup.BrokerAddrs) != 3 ||
		!reflect.DeepEqual(r.Body.SyncStateSet, []int64{2}) {
		t.Fatalf("body %+v", r.Body)
	}
	req := fc.Calls()[len(fc.Calls())-1]
	if req.Addr != ctl1 || req.Code != code.ControllerElectMaster || req.Ext["designateElect"] != "true" ||
		req.Ext["brokerId"] != "2" || req.Ext["clusterName"] != "DefaultCluster" || req.Ext["brokerName"] != "broker-a" {
		t.Fatalf("request %+v", req)
	}
	if _, err := strconv.ParseInt(req.Ext["invokeTime"], 10, 64); err != nil {
		t.Fatalf("invokeTime %q", req.Ext["invokeTime"])
	}

	for _, tc := range []struct {
		name string
		id   int64
		want int32
	}{
		{"broker-a", 2, code.ControllerMasterStillExist},
		{"broker-a", 3, code.ControllerElectMasterFailed},
		{"broker-x", 1, code.ControllerBrokerNeedToBeRegistered},
	} {
		_, err := c.ElectMaster(ctx, ctl1, "DefaultCluster", tc.name, tc.id)
		if !admin.IsCode(err, tc.want) || !strings.Contains(err.Error(), code.ResponseName(tc.want)) {
			t.Errorf("elect %s/%d: %v, want code %d", tc.name, tc.id, err, tc.want)
		}
	}

	// A Java-encoded body: bare numeric map keys.
	cs.Sets["broker-a"].SyncStateSet = []int64{1, 2}
	cs.RawBody[code.ControllerElectMaster] = `{"brokerMemberGroup":{"brokerAddrs":{1:"10.0.0.1:10911",3:"10.0.0.3:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[1]}`
	r, err = c.ElectMaster(ctx, ctl1, "DefaultCluster", "broker-a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Body.BrokerMemberGroup.BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{1: "10.0.0.1:10911", 3: "10.0.0.3:10911"}) {
		t.Fatalf("bare keys decoded to %v", got)
	}
	cs.RawBody[code.ControllerElectMaster] = `{"brokerMemberGroup":`
	cs.Sets["broker-a"].SyncStateSet = []int64{1, 2}
	if _, err := c.ElectMaster(ctx, ctl1, "DefaultCluster", "broker-a", 2); err == nil || !strings.Contains(err.Error(), "decode body") {
		t.Fatalf("bad body: %v", err)
	}
}

func TestCleanBrokerMetadata(t *testing.T) {
	fc, cs, c := controllerFixture(t)
	ctx := context.Background()
	req := func(ids string, living bool) admin.CleanBrokerMetadataRequest {
		return admin.CleanBrokerMetadataRequest{Cluster: "DefaultCluster", BrokerName: "broker-a", ControllerIDs: ids, CleanLiving: living}
	}
	if err := c.CleanBrokerMetadata(ctx, ctl1, req("2", false)); !admin.IsCode(err, code.ControllerInvalidCleanBrokerMetadata) {
		t.Fatalf("clean alive: %v", err)
	}
	if err := c.CleanBrokerMetadata(ctx, ctl1, req("", false)); !admin.IsCode(err, code.ControllerInvalidCleanBrokerMetadata) {
		t.Fatalf("clean set with master: %v", err)
	}
	n := len(fc.Calls())
	if err := c.CleanBrokerMetadata(ctx, ctl1, req("1;x", true)); err == nil || len(fc.Calls()) != n {
		t.Fatalf("bad ids: %v, %d requests sent", err, len(fc.Calls())-n)
	}
	if err := c.CleanBrokerMetadata(ctx, ctl2, req("3", false)); err != nil {
		t.Fatalf("clean dead replica: %v", err)
	}
	last := fc.Calls()[len(fc.Calls())-1]
	if last.Addr != ctl1 || last.Ext["brokerControllerIdsToClean"] != "3" || last.Ext["isCleanLivingBroker"] != "false" {
		t.Fatalf("request %+v", last)
	}
	if _, found := cs.Sets["broker-a"].Replicas[3]; found {
		t.Fatal("replica 3 still there")
	}
	if err := c.CleanBrokerMetadata(ctx, ctl1, admin.CleanBrokerMetadataRequest{BrokerName: "broker-b", CleanLiving: true}); err != nil {
		t.Fatalf("clean living set: %v", err)
	}
	last = fc.Calls()[len(fc.Calls())-1]
	if _, found := last.Ext["clusterName"]; found {
		t.Fatalf("empty cluster sent: %+v", last.Ext)
	}
	if _, found := cs.Sets["broker-b"]; found {
		t.Fatal("broker-b still there")
	}
}

func TestControllerConfig(t *testing.T) {
	_, cs, c := controllerFixture(t)
	ctx := context.Background()
	if err := c.UpdateControllerConfig(ctx, []string{ctl1, ctl2}, map[string]string{"enableElectUncleanMaster": "true"}); err != nil {
		t.Fatal(err)
	}
	cfgs, err := c.GetControllerConfig(ctx, []string{ctl2, ctl1})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || cfgs[0].Addr != ctl2 || cfgs[1].Addr != ctl1 {
		t.Fatalf("configs %+v", cfgs)
	}
	for _, sc := range cfgs {
		if v, _ := sc.Config.Get("enableElectUncleanMaster"); v != "true" {
			t.Fatalf("%s: enableElectUncleanMaster=%q", sc.Addr, v)
		}
	}

	// A black-listed key is refused by every node; both errors come back.
	err = c.UpdateControllerConfig(ctx, []string{ctl1, ctl2}, map[string]string{"configStorePath": "/elsewhere"})
	if !admin.IsCode(err, code.NoPermission) || !strings.Contains(err.Error(), ctl1) || !strings.Contains(err.Error(), ctl2) {
		t.Fatalf("black-listed key: %v", err)
	}
	if cs.Config[ctl1]["configStorePath"] == "/elsewhere" {
		t.Fatal("black-listed key changed")
	}
	if _, err := c.GetControllerConfig(ctx, nil); err == nil {
		t.Fatal("no address: want an error")
	}
}

func TestBrokerEpochAndHAStatus(t *testing.T) {
	_, cs, c := controllerFixture(t)
	ctx := context.Background()
	ec, err := c.GetBrokerEpochCache(ctx, admintest.SampleBrokerA1)
	if err != nil {
		t.Fatal(err)
	}
	if ec.BrokerID != 2 || ec.BrokerName != "broker-a" || len(ec.EpochList) != 3 || ec.EpochList[2].EndOffset != 1<<63-1 || ec.MaxOffset != 11500 {
		t.Fatalf("epoch cache %+v", ec)
	}
	ha, err := c.GetBrokerHAStatus(ctx, admintest.SampleBrokerA0)
	if err != nil {
		t.Fatal(err)
	}
	if !ha.Master || ha.InSyncSlaveNums != 1 || len(ha.HAConnectionInfo) != 2 || !ha.HAConnectionInfo[0].InSync {
		t.Fatalf("ha %+v", ha)
	}
	ha, err = c.GetBrokerHAStatus(ctx, admintest.SampleBrokerA1)
	if err != nil || ha.Master || ha.HAClientRuntimeInfo == nil || ha.HAClientRuntimeInfo.MasterFlushOffset != 9000 {
		t.Fatalf("slave ha %+v, %v", ha, err)
	}

	delete(cs.Epochs, admintest.SampleBrokerB0)
	if _, err := c.GetBrokerEpochCache(ctx, admintest.SampleBrokerB0); !admin.IsCode(err, code.SystemError) {
		t.Fatalf("not in controller mode: %v", err)
	}
	cs.RawBody[code.GetBrokerHAStatus] = `not json`
	if _, err := c.GetBrokerHAStatus(ctx, admintest.SampleBrokerA0); err == nil || !strings.Contains(err.Error(), "GET_BROKER_HA_STATUS") {
		t.Fatalf("bad body: %v", err)
	}
	cs.RawBody[code.GetBrokerHAStatus] = `{"haConnectionInfo":[],"inSyncSlaveNums":0,"master":true,"masterCommitLogMaxOffset":7}`
	if ha, err = c.GetBrokerHAStatus(ctx, admintest.SampleBrokerA0); err != nil || ha.MasterCommitLogMaxOffset != 7 {
		t.Fatalf("java body: %+v, %v", ha, err)
	}
}
