package protocol

import "testing"

func TestQuoteBareKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{0:"a",1:"b"}`, `{"0":"a","1":"b"}`},
		{`{"hostedQueues":{0:[{"gen":0}], -3 :[]}}`, `{"hostedQueues":{"0":[{"gen":0}], "-3" :[]}}`},
		{`{"s":"{0:1}","a":[1,2]}`, `{"s":"{0:1}","a":[1,2]}`},
		{`{"e":"x\"{5:6}"}`, `{"e":"x\"{5:6}"}`},
		{`[{7:1},8]`, `[{"7":1},8]`},
	} {
		got, _ := QuoteBareKeys([]byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("QuoteBareKeys(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestUnmarshalDetail(t *testing.T) {
	in := `{"bname":"broker-b","currIdMap":{},"dirty":false,"epoch":1700000001000,"hostedQueues":{0:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1},{"bname":"broker-b","endOffset":-1,"gen":1,"logicOffset":-1,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"T","totalQueues":1}`
	var d TopicQueueMappingDetail
	if err := Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.HostedQueues[0]) != 2 || d.HostedQueues[0][1].Bname != "broker-b" || d.Epoch != 1700000001000 {
		t.Fatalf("got %+v", d)
	}
	info := d.Info()
	if info.CurrIDMap[0] != 0 || len(info.CurrIDMap) != 1 {
		t.Fatalf("info %+v", info)
	}
}

func TestRouteJSONCompact(t *testing.T) {
	r := TopicRouteData{
		BrokerDatas:       []BrokerData{{BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, BrokerName: "broker-a", Cluster: "DefaultCluster"}},
		FilterServerTable: map[string][]string{},
		QueueDatas:        []QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
	}
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	if got := string(MustMarshal(r)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
