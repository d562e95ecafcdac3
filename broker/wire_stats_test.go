package broker

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/broker/brokerstats"
	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestBrokerStatsWired: sends and pulls reach the broker's statistics and
// VIEW_BROKER_STATS_DATA (315) answers them once sampled.
func TestBrokerStatsWired(t *testing.T) {
	t.Parallel()
	r := newFilterRig(t)
	r.createTopic("StatsT", "")
	for range 3 {
		r.want("send", r.send("StatsT", []byte("hello")), code.Success, "")
	}
	resp := r.invoke(code.PullMessage, map[string]string{
		"consumerGroup": "sg", "topic": "StatsT", "queueId": "0", "queueOffset": "0",
		"maxMsgNums": "32", "sysFlag": strconv.Itoa(pull.FlagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subVersion": "0", "subscription": "*", "expressionType": "TAG",
	}, nil)
	r.want("pull", resp, code.Success, "")
	r.b.stats.SampleMinute()

	view := func(name, key string) brokerstats.Data {
		t.Helper()
		resp := r.invoke(code.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, nil)
		r.want("315 "+name, resp, code.Success, "")
		var d brokerstats.Data
		if err := json.Unmarshal(resp.Body, &d); err != nil {
			t.Fatalf("315 body %s: %v", resp.Body, err)
		}
		return d
	}
	// The hour and day windows of an item made after start wait for their
	// next tick (Apache's StatsItemSet samples every item on one schedule).
	if d := view(brokerstats.TopicPutNums, "StatsT"); d.StatsMinute.Sum != 3 || d.StatsDay.Sum != 0 {
		t.Errorf("TOPIC_PUT_NUMS %+v", d)
	}
	if d := view(brokerstats.GroupGetNums, "StatsT@sg"); d.StatsMinute.Sum != 3 {
		t.Errorf("GROUP_GET_NUMS %+v", d)
	}
	r.want("315 unknown", r.invoke(code.ViewBrokerStatsData, map[string]string{"statsName": brokerstats.TopicPutNums, "statsKey": "Nope"}, nil),
		code.SystemError, "The stats <TOPIC_PUT_NUMS> <Nope> not exist")
}
