package command

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
)

// TestStartMonitoring: one round of startMonitoring (its hidden options
// shorten the wait) against the sample: the undone messages of every group
// with a retry topic, per topic, as Java's DefaultMonitorListener logs
// them; nothing on stdout, as Java.
func TestStartMonitoring(t *testing.T) {
	fc := adminSample()
	var out, errb bytes.Buffer
	args := []string{"startMonitoring", "--first-round", "0s", "--rounds", "1", "-n", sampleNS}
	if code := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out.String())
	}
	log := errb.String()
	for _, want := range []string{
		"[MONITOR] =========================================beginRound\n",
		"[MONITOR] reportUndoneMsgs: UndoneMsgs [consumerGroup=g1, topic=TopicTest, undoneMsgsTotal=32, undoneMsgsSingleMQ=20, ",
		"[MONITOR] =========================================endRound\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestDeleteMsgsEventLine: an OFFSET_MOVED_EVENT message (the body
// OffsetMovedEvent.encode() writes) as DefaultMonitorListener logs it; a
// body that is not one is dropped.
func TestDeleteMsgsEventLine(t *testing.T) {
	m := &message.Message{StoreTimestamp: 1733400000123,
		Body: []byte(`{"consumerGroup":"g1","messageQueue":{"brokerName":"broker-a","queueId":3,"topic":"TopicTest"},"offsetNew":40,"offsetRequest":7}`)}
	got, ok := deleteMsgsEventLine(m)
	want := "[MONITOR] reportDeleteMsgsEvent: DeleteMsgsEvent [offsetMovedEvent=OffsetMovedEvent [consumerGroup=g1, messageQueue=MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=3], offsetRequest=7, offsetNew=40], eventTimestamp=1733400000123]"
	if !ok || got != want {
		t.Errorf("got %q, %v\nwant %q", got, ok, want)
	}
	if _, ok := deleteMsgsEventLine(&message.Message{Body: []byte("not json")}); ok {
		t.Error("a body that is not an event was reported")
	}
}
