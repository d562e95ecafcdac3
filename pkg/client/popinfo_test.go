package client

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

func TestPopCheckpointRoundTrip(t *testing.T) {
	tests := []struct {
		in   string
		want popCheckpoint
	}{
		{"12 1700000000000 60000 3 0 broker-a 2 15", popCheckpoint{12, 1700000000000, 60000, 3, "0", "broker-a", 2, 15}},
		{"0 1 2 999 2 b 0", popCheckpoint{0, 1, 2, 999, "2", "b", 0, -1}},
		{"5 1 2 0 1 broker-b 7 9", popCheckpoint{5, 1, 2, 0, "1", "broker-b", 7, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parsePopCheckpoint(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("parse = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Fatalf("String = %q, want %q", s, tt.in)
			}
		})
	}
}

func TestPopCheckpointRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"1 2 3",
		"a 1 2 3 0 b 0 1",
		"1 2 3 4 9 b 0 1",           // unknown retry flag
		"1 2 3 4 0  0 1",            // empty broker name
		"1 2 3 4 0 b x 1",           // bad queue id
		"1 2 3 4 0 b 0 1 2",         // too many fields
		"1 2 3 99999999999 0 b 0 1", // revive queue id out of int32
		"1 2 3 4 0 b 0 -1",          // negative offset
	} {
		if _, err := parsePopCheckpoint(in); !errors.Is(err, errBadHandle) {
			t.Errorf("%q: err = %v, want a bad handle", in, err)
		}
	}
}

func TestPopRetryTopics(t *testing.T) {
	tests := []struct{ topic, flag, real string }{
		{"T", popNormalTopic, "T"},
		{"%RETRY%g_T", popRetryTopicV1, "%RETRY%g_T"},
		{"%RETRY%g+T", popRetryTopicV2, "%RETRY%g+T"},
	}
	for _, tt := range tests {
		if f := popRetryFlag(tt.topic); f != tt.flag {
			t.Errorf("flag of %s = %s, want %s", tt.topic, f, tt.flag)
		}
		if r := popRealTopic(tt.flag, "T", "g"); r != tt.real {
			t.Errorf("real topic for %s = %s, want %s", tt.flag, r, tt.real)
		}
	}
}

func TestPopOffsetInfo(t *testing.T) {
	starts, err := parsePopStartOffsets("0 1 10;1 0 3")
	if err != nil || !maps.Equal(starts, map[string]int64{"0@1": 10, "1@0": 3}) {
		t.Fatalf("starts = %v, %v", starts, err)
	}
	offs, err := parsePopMsgOffsets("0 1 10,11,13;1 0 3")
	if err != nil || len(offs) != 2 || !slices.Equal(offs["0@1"], []int64{10, 11, 13}) || !slices.Equal(offs["1@0"], []int64{3}) {
		t.Fatalf("offsets = %v, %v", offs, err)
	}
	for _, bad := range []string{"0 1", "0 1 x", "0 1 2;0 1 3"} {
		if _, err := parsePopStartOffsets(bad); err == nil {
			t.Errorf("start offsets %q accepted", bad)
		}
	}
	for _, bad := range []string{"0 1", "0 1 2,x", "0 1 2;0 1 3"} {
		if _, err := parsePopMsgOffsets(bad); err == nil {
			t.Errorf("msg offsets %q accepted", bad)
		}
	}
}

// FuzzParsePopCheckpoint: any handle that parses prints back to itself.
func FuzzParsePopCheckpoint(f *testing.F) {
	f.Add("12 1700000000000 60000 3 0 broker-a 2 15")
	f.Add("0 1 2 999 2 b 0")
	f.Fuzz(func(t *testing.T, s string) {
		ck, err := parsePopCheckpoint(s)
		if err != nil {
			return
		}
		again, err := parsePopCheckpoint(ck.String())
		if err != nil || again != ck {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, ck, ck.String(), again, err)
		}
	})
}

// FuzzPopOffsetInfo: the pop response headers never panic the decoder.
func FuzzPopOffsetInfo(f *testing.F) {
	f.Add("0 1 10;1 0 3")
	f.Add("0 1 10,11,13")
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := parsePopStartOffsets(s); err == nil && s != "" && len(m) == 0 {
			t.Fatalf("%q parsed to nothing", s)
		}
		if m, err := parsePopMsgOffsets(s); err == nil {
			for k, v := range m {
				if len(v) == 0 {
					t.Fatalf("%q: key %s without offsets", s, k)
				}
			}
		}
	})
}
