package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
