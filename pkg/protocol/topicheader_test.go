package protocol

import "testing"

func TestTopicConfigOf(t *testing.T) {
	f := FieldsOf(map[string]string{"readQueueNums": "4", "writeQueueNums": "2", "perm": "6", "topicSysFlag": "1"})
	tc := TopicConfigOf(f, "T")
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if tc.TopicName != "T" || tc.ReadQueueNums != 4 || tc.WriteQueueNums != 2 || tc.Perm != 6 ||
		tc.TopicFilterType != SingleTag || tc.TopicSysFlag != 1 {
		t.Fatalf("TopicConfigOf = %+v", tc)
	}
	f = FieldsOf(map[string]string{"readQueueNums": "4", "perm": "6"})
	TopicConfigOf(f, "T")
	if f.Err() == nil {
		t.Fatal("missing writeQueueNums not reported")
	}
}
