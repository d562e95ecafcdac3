package popcodec

import (
	"errors"
	"strings"
	"testing"
)

func TestParseExtraInfo(t *testing.T) {
	tests := []struct {
		in   string
		want ExtraInfo
		err  bool
	}{
		{in: "100 1700000000000 60000 3 0 broker-a 1 105",
			want: ExtraInfo{CkQueueOffset: 100, PopTime: 1700000000000, InvisibleTime: 60000, ReviveQid: 3, Retry: "0", BrokerName: "broker-a", QueueID: 1, QueueOffset: 105, HasQueueOffset: true}},
		{in: "0 1 2 999 1 b 0",
			want: ExtraInfo{PopTime: 1, InvisibleTime: 2, ReviveQid: 999, Retry: "1", BrokerName: "b"}},
		{in: "7 8 9 0 2 broker-b 4 7", want: ExtraInfo{CkQueueOffset: 7, PopTime: 8, InvisibleTime: 9, Retry: "2", BrokerName: "broker-b", QueueID: 4, QueueOffset: 7, HasQueueOffset: true}},
		{in: "", err: true},
		{in: "hello world", err: true},
		{in: "1 2 3 4 0 b", err: true},            // six fields: no queue id
		{in: "1 2 3 4 0 b 0 1 2", err: true},      // nine fields
		{in: "x 2 3 4 0 b 0", err: true},          // not a number
		{in: "1 2 3 4 9 b 0", err: true},          // retry flag
		{in: "1 2 3 4 0  0", err: true},           // empty broker name
		{in: "1 2 3 1000 0 b 0", err: true},       // revive queue out of range
		{in: "1 2 3 -1 0 b 0", err: true},         // negative revive queue
		{in: "-1 2 3 4 0 b 0", err: true},         // negative offset
		{in: "1 2 3 4 0 b 3000000000", err: true}, // queue id overflow
		{in: "1 2 3 4 0 b 0 -5", err: true},       // negative message offset
		{in: "1  2 3 4 0 b 0", err: true},         // double space
		{in: strings.Repeat("1", 600), err: true}, // oversize
		{in: "1 2 3 4 0 b 0 99999999999999999999", err: true},
	}
	for _, tc := range tests {
		got, err := ParseExtraInfo(tc.in)
		if tc.err {
			if err == nil || !errors.Is(err, ErrExtraInfo) {
				t.Errorf("%q: err %v, want ErrExtraInfo", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("round trip %q → %q", tc.in, s)
		}
	}
}

func TestRetryTopics(t *testing.T) {
	tests := []struct {
		topic, group, flag, v1, v2 string
	}{
		{"T", "g", RetryNone, "%RETRY%g_T", "%RETRY%g+T"},
		{"my_topic", "my_group", RetryNone, "%RETRY%my_group_my_topic", "%RETRY%my_group+my_topic"},
	}
	for _, tc := range tests {
		if RetryFlag(tc.topic) != tc.flag || RetryFlag(tc.v1) != RetryV1 || RetryFlag(tc.v2) != RetryV2 {
			t.Errorf("%s: flags %s %s %s", tc.topic, RetryFlag(tc.topic), RetryFlag(tc.v1), RetryFlag(tc.v2))
		}
		for flag, want := range map[string]string{RetryNone: tc.topic, RetryV1: tc.v1, RetryV2: tc.v2} {
			if got, err := RealTopic(tc.topic, tc.group, flag); err != nil || got != want {
				t.Errorf("RealTopic(%s,%s,%s) = %q %v, want %q", tc.topic, tc.group, flag, got, err, want)
			}
		}
		for _, rt := range []string{tc.v1, tc.v2} {
			if got, ok := ParseRetryTopic(rt, tc.group); !ok || got != tc.topic {
				t.Errorf("ParseRetryTopic(%s) = %q %v", rt, got, ok)
			}
		}
		if RetryTopic(tc.topic, tc.group, false) != tc.v1 || RetryTopic(tc.topic, tc.group, true) != tc.v2 {
			t.Errorf("RetryTopic")
		}
	}
	if _, err := RealTopic("T", "g", "3"); err == nil {
		t.Error("retry flag 3 accepted")
	}
	if _, ok := ParseRetryTopic("%RETRY%g", "g"); ok {
		t.Error("push retry topic parsed as a pop retry topic")
	}
}
