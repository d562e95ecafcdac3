package checkmsg

import (
	"strings"
	"testing"
)

// TestBodyGolden pins the body generator; the values were produced by the
// Java implementation (rmqgo.ClientCheck.body / crc), and
// scripts/node/client-check.js must produce the same.
func TestBodyGolden(t *testing.T) {
	for _, tc := range []struct {
		seq  int
		body string
		crc  string
	}{
		{0, "71853e1a20a8eaf852a7718c3233c3a886405fc4", "139404831"},
		{7, "a73414ac3e2491a98036470b5db22626a7aad6c2", "3171577728"},
		{123456, "ac77b9e81a8cf45429bad1d5befb5d179e83ffc4", "4271593734"},
	} {
		b := Body(tc.seq, 40)
		if string(b) != tc.body {
			t.Errorf("Body(%d, 40) = %s, want %s", tc.seq, b, tc.body)
		}
		if c := CRC(b); c != tc.crc {
			t.Errorf("CRC(Body(%d, 40)) = %s, want %s", tc.seq, c, tc.crc)
		}
	}
	if got := Body(3, 0); len(got) != 0 {
		t.Errorf("Body(3, 0) = %q", got)
	}
}

func TestMatchExpr(t *testing.T) {
	for _, tc := range []struct {
		expr, tag string
		want      bool
	}{
		{"*", "TagA", true},
		{"", "TagA", true},
		{"TagA", "TagA", true},
		{"TagA", "TagB", false},
		{"TagA || TagC", "TagC", true},
		{"TagA||TagC", "TagB", false},
	} {
		if got := MatchExpr(tc.expr, tc.tag); got != tc.want {
			t.Errorf("MatchExpr(%q, %q) = %v", tc.expr, tc.tag, got)
		}
	}
	if n := Expected(10, []string{"TagA", "TagB", "TagC"}, "TagA || TagC"); n != 7 {
		t.Errorf("Expected = %d, want 7", n)
	}
}

func TestVerify(t *testing.T) {
	body := Body(5, 100)
	good := Received{
		Topic: "T",
		Tags:  "TagB",
		Keys:  Keys("r1", 5),
		Body:  body,
		Props: Props("r1", 5, body, "TagB", "go"),
	}
	if err := Verify(good, "T", "*"); err != nil {
		t.Fatalf("Verify(good) = %v", err)
	}
	if Keys("r1", 5) != "chk-r1-5 seq-5" {
		t.Errorf("Keys = %q", Keys("r1", 5))
	}
	mutate := map[string]func(r *Received){
		"topic":    func(r *Received) { r.Topic = "U" },
		"tags":     func(r *Received) { r.Tags = "TagA" },
		"keys":     func(r *Received) { r.Keys = "chk-r1-5" },
		"body":     func(r *Received) { r.Body = append([]byte("x"), r.Body[1:]...) },
		"length":   func(r *Received) { r.Body = r.Body[:99] },
		"utf8":     func(r *Received) { r.Props[PropUTF8] = "hello" },
		"noclient": func(r *Received) { delete(r.Props, PropClient) },
	}
	for name, f := range mutate {
		r := good
		r.Props = Props("r1", 5, body, "TagB", "go")
		r.Body = append([]byte(nil), body...)
		f(&r)
		if err := Verify(r, "T", "*"); err == nil {
			t.Errorf("%s: Verify accepted a mutated message", name)
		}
	}
	if err := Verify(good, "T", "TagA"); err == nil || !strings.Contains(err.Error(), "subscription") {
		t.Errorf("Verify with a non-matching expression = %v", err)
	}
	if _, _, ok := (Received{Props: map[string]string{}}).ID(); ok {
		t.Error("ID of a foreign message is ok")
	}
}

func TestParseSizes(t *testing.T) {
	s, err := ParseSizes(DefaultSizes)
	if err != nil || len(s) != 8 || s[7] != 65536 {
		t.Fatalf("ParseSizes(DefaultSizes) = %v, %v", s, err)
	}
	if _, err := ParseSizes("1,x"); err == nil {
		t.Error("ParseSizes accepted x")
	}
}
