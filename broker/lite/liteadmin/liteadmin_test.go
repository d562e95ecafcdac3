package liteadmin_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/lite/liteadmin"
	"github.com/rmqgo/rmq/broker/lite/litetest"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	parent = "P"
	group  = "lg"
	lite   = "user-1"
)

func setup(t *testing.T) *litetest.Rig {
	t.Helper()
	r := litetest.New(t, nil)
	r.CreateLiteAndPlain(parent, "+message.type=LITE,+lite.topic.expiration=30", 1, group)
	return r
}

// TestValidation: admin headers that are refused and their codes (docs/lite-topics.md §7).
func TestValidation(t *testing.T) {
	r := setup(t)
	tests := []struct {
		name   string
		code   int32
		ext    map[string]string
		want   int32
		remark string
	}{
		{"parent info: no topic", liteadmin.CodeGetParentTopicInfo, nil, code.InvalidParameter, "topic"},
		{"parent info: unknown topic", liteadmin.CodeGetParentTopicInfo, map[string]string{"topic": "NoSuch"}, code.TopicNotExist, "not exist"},
		{"parent info: not LITE", liteadmin.CodeGetParentTopicInfo, map[string]string{"topic": "Plain"}, code.InvalidParameter, "type not match"},
		{"lite topic info: no liteTopic", liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": parent}, code.InvalidParameter, "liteTopic"},
		{"lite topic info: illegal name", liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": parent, "liteTopic": "a$b"}, code.InvalidParameter, "illegal lite topic"},
		{"lite topic info: not LITE", liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": "Plain", "liteTopic": lite}, code.InvalidParameter, "type not match"},
		{"client info: no group", liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent}, code.InvalidParameter, "group"},
		{"client info: maxCount 0", liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "maxCount": "0"}, code.InvalidParameter, "maxCount"},
		{"client info: maxCount 10001", liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "maxCount": "10001"}, code.InvalidParameter, "maxCount"},
		{"client info: unknown group", liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": "nope"}, code.SubscriptionGroupNotExist, ""},
		{"client info: group of another parent", liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": "plain_cg"}, code.InvalidParameter, "not match"},
		{"group info: no group", liteadmin.CodeGetLiteGroupInfo, nil, code.InvalidParameter, "group"},
		{"group info: unknown group", liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": "nope"}, code.SubscriptionGroupNotExist, ""},
		{"group info: not a lite group", liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": "plain_cg"}, code.InvalidParameter, "not a LITE group"},
		{"group info: topK not a number", liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": group, "topK": "x"}, code.InvalidParameter, "topK"},
		{"trigger: no group", liteadmin.CodeTriggerLiteDispatch, nil, code.InvalidParameter, "group"},
		{"trigger: unknown group", liteadmin.CodeTriggerLiteDispatch, map[string]string{"group": "nope"}, code.SubscriptionGroupNotExist, ""},
		{"trigger: not a lite group", liteadmin.CodeTriggerLiteDispatch, map[string]string{"group": "plain_cg"}, code.InvalidParameter, "not a LITE group"},
		{"list: no parentTopic", liteadmin.CodeListLiteTopics, nil, code.InvalidParameter, "parentTopic"},
		{"list: limit 0", liteadmin.CodeListLiteTopics, map[string]string{"parentTopic": parent, "limit": "0"}, code.InvalidParameter, "limit"},
		{"list: limit 1001", liteadmin.CodeListLiteTopics, map[string]string{"parentTopic": parent, "limit": "1001"}, code.InvalidParameter, "limit"},
	}
	// r.Want fails the test itself (r.T): no subtests.
	for _, tt := range tests {
		r.Want(tt.name, r.Invoke(tt.code, tt.ext, nil), tt.want, tt.remark)
	}
}

// TestHappyPath: after one subscribed client and one message the bodies
// report the lite topic, its offsets, its subscriber and the group's lag.
func TestHappyPath(t *testing.T) {
	r := setup(t)
	r.Want("subscribe", r.Subscribe("PARTIAL_ADD", "c1", group, parent, []string{lite}, nil), code.Success, "")
	r.Want("send", r.Send(parent, 0, "x", message.PropertyLiteTopic, lite), code.Success, "")
	testutil.Eventually(t, 3*time.Second, func() error {
		var bi protocol.GetBrokerLiteInfoResponseBody
		r.Want("broker info", r.Admin(liteadmin.CodeGetBrokerLiteInfo, nil, &bi), code.Success, "")
		if bi.CurrentLmqNum != 1 {
			return fmt.Errorf("currentLmqNum %d", bi.CurrentLmqNum)
		}
		if bi.LiteSubscriptionCount != 1 || bi.TopicMeta[parent] != 30 || !slices.Equal(bi.GroupMeta[parent], []string{group}) {
			return fmt.Errorf("broker info %+v", bi)
		}
		return nil
	})
	var pi protocol.GetParentTopicInfoResponseBody
	r.Want("parent info", r.Admin(liteadmin.CodeGetParentTopicInfo, map[string]string{"topic": parent}, &pi), code.Success, "")
	if pi.Topic != parent || pi.TTL != 30 || pi.LiteTopicCount != 1 || !slices.Equal(pi.Groups, []string{group}) {
		t.Fatalf("parent info %+v", pi)
	}
	var ti protocol.GetLiteTopicInfoResponseBody
	r.Want("lite topic info", r.Admin(liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": parent, "liteTopic": lite}, &ti), code.Success, "")
	if ti.TopicOffset == nil || ti.TopicOffset.MaxOffset != 1 || !ti.ShardingToBroker || len(ti.Subscriber) != 1 || ti.Subscriber[0].ClientID != "c1" {
		t.Fatalf("lite topic info %+v", ti)
	}
	var ci protocol.GetLiteClientInfoResponseBody
	r.Want("client info", r.Admin(liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "clientId": "c1"}, &ci), code.Success, "")
	if ci.LiteTopicCount != 1 || !slices.Equal(ci.LiteTopicSet, []string{lite}) {
		t.Fatalf("client info %+v", ci)
	}
	var gi protocol.GetLiteGroupInfoResponseBody
	r.Want("group info", r.Admin(liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": group}, &gi), code.Success, "")
	if gi.ParentTopic != parent || gi.TotalLagCount != 1 || len(gi.LagCountTopK) != 1 || gi.LagCountTopK[0].LiteTopic != lite {
		t.Fatalf("group info %+v", gi)
	}
	r.Want("trigger", r.Invoke(liteadmin.CodeTriggerLiteDispatch, map[string]string{"group": group, "clientId": "c1"}, nil), code.Success, "")
	var page protocol.ListLiteTopicsResponseBody
	r.Want("list", r.Admin(liteadmin.CodeListLiteTopics, map[string]string{"parentTopic": parent}, &page), code.Success, "")
	if page.Total != 1 || len(page.LiteTopics) != 1 {
		t.Fatalf("list %+v", page)
	}
}
