package broker

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestDeleteTopicDeletesPopRetryTopics: DELETE_TOPIC_IN_BROKER also
// deletes the pop retry topic of a group with offsets on the topic
// (clearRetryTopicWhenDeleteTopic, on by default), not another group's
// retry topic of another topic.
func TestDeleteTopicDeletesPopRetryTopics(t *testing.T) {
	ns := fakens.Start(t)
	b := startBroker(t, testConfig(t, t.TempDir(), ns.Addr()), nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	invoke := invoker(t, b)
	for _, tp := range []string{"T", "%RETRY%g1_T", "%RETRY%g2_U"} {
		resp := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": tp, "readQueueNums": "1", "writeQueueNums": "1",
			"perm": "6", "topicFilterType": "SINGLE_TAG", "defaultTopic": "TBW102"}, nil)
		if resp.Code != code.Success {
			t.Fatalf("create %s: %d %s", tp, resp.Code, resp.Remark)
		}
	}
	b.store.Offsets().Commit(offset.Key{Group: "g1", Topic: "T", QueueID: 0}, 5)
	b.store.Offsets().Commit(offset.Key{Group: "g2", Topic: "U", QueueID: 0}, 5)
	if resp := invoke(code.DeleteTopicInBroker, map[string]string{"topic": "T"}, nil); resp.Code != code.Success {
		t.Fatalf("delete: %d %s", resp.Code, resp.Remark)
	}
	if b.topics.Contains("T") || b.topics.Contains("%RETRY%g1_T") {
		t.Errorf("T %v, %%RETRY%%g1_T %v: want both deleted", b.topics.Contains("T"), b.topics.Contains("%RETRY%g1_T"))
	}
	if !b.topics.Contains("%RETRY%g2_U") {
		t.Errorf("%s deleted", "%RETRY%g2_U")
	}
}

// TestUpdateBrokerConfigWarnsNoEffect: UPDATE_BROKER_CONFIG of a key that
// changes nothing is applied and logged as such.
func TestUpdateBrokerConfigWarnsNoEffect(t *testing.T) {
	ns := fakens.Start(t)
	var logs testutil.SyncBuffer
	b := startBroker(t, testConfig(t, t.TempDir(), ns.Addr()), slog.New(slog.NewTextHandler(&logs, nil)), WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	invoke := invoker(t, b)
	if resp := invoke(code.UpdateBrokerConfig, nil, []byte("highSpeedMode=true\ndefaultTopicQueueNums=4\n")); resp.Code != code.Success {
		t.Fatalf("update: %d %s", resp.Code, resp.Remark)
	}
	if c := b.cfg.Get(); !c.HighSpeedMode || c.DefaultTopicQueueNums != 4 {
		t.Fatal("update not applied")
	}
	if !strings.Contains(logs.String(), `"accepted with no effect: highSpeedMode"`) {
		t.Fatalf("no warning naming highSpeedMode alone:\n%s", logs.String())
	}
}
