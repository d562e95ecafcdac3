package protocol

import (
	"reflect"
	"testing"
)

// javaStats is what a Java 5.5 broker sends for GET_TOPIC_STATS_INFO (captured
// from fastjson2's TopicStatsTable.toJson()).
const javaStats = `{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":120,"minOffset":0}},"topicPutTps":0.0}`

func TestTopicStatsTableDecodeJava(t *testing.T) {
	var st TopicStatsTable
	if err := UnmarshalMQKeyed([]byte(javaStats), &st); err != nil {
		t.Fatal(err)
	}
	want := MQMap[TopicOffset]{
		{BrokerName: "broker-a", QueueID: 0, Topic: "T"}: {LastUpdateTimestamp: 1700000000000, MaxOffset: 120},
		{BrokerName: "broker-a", QueueID: 1, Topic: "T"}: {},
	}
	if !reflect.DeepEqual(st.OffsetTable, want) {
		t.Fatalf("got %+v", st.OffsetTable)
	}
}

func TestTopicStatsTableRoundTrip(t *testing.T) {
	st := TopicStatsTable{OffsetTable: MQMap[TopicOffset]{
		{BrokerName: "broker-b", QueueID: 0, Topic: "T"}:  {MaxOffset: 3},
		{BrokerName: "broker-a", QueueID: 10, Topic: "T"}: {MaxOffset: 2},
		{BrokerName: "broker-a", QueueID: 2, Topic: "T"}:  {MaxOffset: 1, LastUpdateTimestamp: 5},
	}, TopicPutTps: 1.5}
	b, err := MarshalMQKeyed(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offsetTable":{{"brokerName":"broker-a","queueId":2,"topic":"T"}:{"lastUpdateTimestamp":5,"maxOffset":1,"minOffset":0},{"brokerName":"broker-a","queueId":10,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":2,"minOffset":0},{"brokerName":"broker-b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":3,"minOffset":0}},"topicPutTps":1.5}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back TopicStatsTable
	if err := UnmarshalMQKeyed(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("round trip: %+v", back)
	}
	// Plain Marshal is standard JSON with string keys; it decodes too.
	std := MustMarshal(st)
	var back2 TopicStatsTable
	if err := UnmarshalMQKeyed(std, &back2); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back2, st) {
		t.Fatalf("standard round trip: %+v", back2)
	}
}

func TestMQMapHelpers(t *testing.T) {
	in := `{{"brokerName":"b","queueId":0,"topic":"T"}:100, {"topic":"T","queueId":1,"brokerName":"b"} : 200}`
	m, err := UnmarshalMQMap[int64]([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if m[MessageQueue{"b", 0, "T"}] != 100 || m[MessageQueue{"b", 1, "T"}] != 200 || len(m) != 2 {
		t.Fatalf("got %v", m)
	}
	out, err := MarshalMQMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{{"brokerName":"b","queueId":0,"topic":"T"}:100,{"brokerName":"b","queueId":1,"topic":"T"}:200}`; string(out) != want {
		t.Fatalf("got %s", out)
	}
}

func TestQuoteObjectKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{{"a":1}:2}`, `{"{\"a\":1}":2}`},
		{`{"s":"{x}:1","m":{{"b":"}"}:[1,{"c":2}]}}`, `{"s":"{x}:1","m":{"{\"b\":\"}\"}":[1,{"c":2}]}}`},
		{`[{"k":{"v":1}}]`, `[{"k":{"v":1}}]`},
	} {
		got, _ := QuoteObjectKeys([]byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("QuoteObjectKeys(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if back := UnquoteObjectKeys(got); string(back) != tc.in {
			t.Errorf("UnquoteObjectKeys(%s) = %s, want %s", got, back, tc.in)
		}
	}
}

func TestMessageQueueValue(t *testing.T) {
	type body struct {
		MQSet []MessageQueue `json:"mqSet"`
	}
	b := MustMarshal(body{MQSet: []MessageQueue{{"b", 3, "T"}}})
	if want := `{"mqSet":[{"brokerName":"b","queueId":3,"topic":"T"}]}`; string(b) != want {
		t.Fatalf("got %s", b)
	}
	var back body
	if err := Unmarshal(b, &back); err != nil || back.MQSet[0] != (MessageQueue{"b", 3, "T"}) {
		t.Fatalf("got %+v %v", back, err)
	}
	mqs := []MessageQueue{{"b", 1, "T"}, {"a", 2, "T"}, {"a", 1, "T"}, {"z", 0, "S"}}
	SortMessageQueues(mqs)
	if want := []MessageQueue{{"z", 0, "S"}, {"a", 1, "T"}, {"a", 2, "T"}, {"b", 1, "T"}}; !reflect.DeepEqual(mqs, want) {
		t.Fatalf("sorted %v", mqs)
	}
	if s := (MessageQueue{"b", 1, "T"}).String(); s != "MessageQueue [topic=T, brokerName=b, queueId=1]" {
		t.Fatal(s)
	}
}
