package client

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Bodies from docs/protocol.md §4.5.
const (
	javaHeartbeat = `{"clientID":"10.0.0.9@4711#123456789","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g1","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,"tagsSet":[],"topic":"T"}],"unitMode":false}],"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}],"withoutSub":false}`
	goHeartbeat   = `{"clientID":"10.0.0.9@4711","producerDataSet":[],"consumerDataSet":[{"groupName":"g1","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"a || b","tagsSet":["a","b"],"codeSet":["97","98"],"subVersion":1700000000000000000,"expressionType":"TAG"}],"unitMode":false}]}`
)

func TestDecodeHeartbeatJava(t *testing.T) {
	hb, err := DecodeHeartbeat([]byte(javaHeartbeat))
	if err != nil {
		t.Fatal(err)
	}
	if hb.ClientID != "10.0.0.9@4711#123456789" || len(hb.ProducerDataSet) != 1 || hb.ProducerDataSet[0].GroupName != "CLIENT_INNER_PRODUCER" {
		t.Fatalf("decoded %+v", hb)
	}
	cd := hb.ConsumerDataSet[0]
	if cd.GroupName != "g1" || cd.ConsumeType != ConsumePassively || cd.MessageModel != Clustering || cd.ConsumeFromWhere != "CONSUME_FROM_LAST_OFFSET" {
		t.Fatalf("consumer data %+v", cd)
	}
	s := cd.SubscriptionDataSet[0]
	if s.Topic != "T" || s.SubString != "*" || s.SubVersion != 1700000000000 || len(s.CodeSet) != 0 {
		t.Fatalf("subscription %+v", s)
	}
}

func TestDecodeHeartbeatGo(t *testing.T) {
	hb, err := DecodeHeartbeat([]byte(goHeartbeat))
	if err != nil {
		t.Fatal(err)
	}
	s := hb.ConsumerDataSet[0].SubscriptionDataSet[0]
	if !slices.Equal(s.CodeSet, []int32{97, 98}) || s.SubVersion != 1700000000000000000 || !slices.Equal(s.TagsSet, []string{"a", "b"}) {
		t.Fatalf("subscription %+v", s)
	}
}

func TestDecodeHeartbeatLenient(t *testing.T) {
	body := `{"clientID":"c","heartbeatFingerprint":"42","withoutSub":"true","consumerDataSet":[{"groupName":"g","consumeType":1,"messageModel":0,"consumeFromWhere":4,
		"subscriptionDataSet":[{"topic":"T","subString":"x","tagsSet":["x"],"subVersion":"17"}]}]}`
	hb, err := DecodeHeartbeat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	cd := hb.ConsumerDataSet[0]
	if hb.HeartbeatFingerprint != 42 || !hb.WithoutSub || cd.ConsumeType != ConsumePassively || cd.MessageModel != Broadcasting ||
		cd.ConsumeFromWhere != "CONSUME_FROM_FIRST_OFFSET" {
		t.Fatalf("decoded %+v %+v", hb, cd)
	}
	s := cd.SubscriptionDataSet[0]
	if s.SubVersion != 17 || s.ExpressionType != ExpressionTag || !slices.Equal(s.CodeSet, []int32{message.TagHashCode("x")}) {
		t.Fatalf("codes not derived from tags: %+v", s)
	}
}

// TestDecodeLiteSelective: 5.5's third message model, by name or by its
// ordinal; a fourth is refused.
func TestDecodeLiteSelective(t *testing.T) {
	for _, model := range []string{`"LITE_SELECTIVE"`, `2`} {
		hb, err := DecodeHeartbeat([]byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY","messageModel":` + model + `}]}`))
		if err != nil || hb.ConsumerDataSet[0].MessageModel != LiteSelective {
			t.Errorf("messageModel %s: %+v, %v", model, hb, err)
		}
	}
	if _, err := DecodeHeartbeat([]byte(`{"clientID":"c","consumerDataSet":[{"groupName":"g","messageModel":3}]}`)); err == nil {
		t.Error("messageModel 3 decoded without error")
	}
}

func TestDecodeHeartbeatMalformed(t *testing.T) {
	for _, body := range []string{"", "   ", "{", "[]", `{"clientID":1}`, `{"consumerDataSet":[{"consumeType":9}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}`, `{"withoutSub":"maybe"}`} {
		if _, err := DecodeHeartbeat([]byte(body)); err == nil {
			t.Errorf("%q decoded without error", body)
		}
	}
}

func TestSubscriptionJSON(t *testing.T) {
	s := SubscriptionData{Topic: "T", SubString: "a", ExpressionType: "TAG", SubVersion: 5, CodeSet: []int32{97}, TagsSet: []string{"a"}}
	want := `{"classFilterMode":false,"codeSet":[97],"expressionType":"TAG","subString":"a","subVersion":5,"tagsSet":["a"],"topic":"T"}`
	if got := string(protocol.MustMarshal(s)); got != want {
		t.Fatalf("got %s", got)
	}
	if got := string(protocol.MustMarshal(SubscriptionData{Topic: "T"})); !strings.Contains(got, `"codeSet":[]`) || !strings.Contains(got, `"tagsSet":[]`) {
		t.Fatalf("empty sets not []: %s", got)
	}
}

func TestBuildSubscription(t *testing.T) {
	tests := []struct {
		sub, typ string
		wantSub  string
		tags     []string
		err      bool
	}{
		{"*", "", "*", nil, false},
		{"", "TAG", "*", nil, false},
		{"a || b", "TAG", "a || b", []string{"a", "b"}, false},
		{"a||a||b", "", "a||a||b", []string{"a", "b"}, false},
		{"a||", "", "a||", []string{"a"}, false},
		{" || ", "", " || ", nil, false}, // Java: no tags, matches nothing
		{"||", "", "", nil, true},
		{"a > 1", "SQL92", "a > 1", nil, false},
		{"", "SQL92", "", nil, true},
	}
	for _, tt := range tests {
		s, err := BuildSubscription("T", tt.sub, tt.typ)
		if tt.err {
			if !errors.Is(err, ErrBadExpression) {
				t.Errorf("%q/%q: err %v, want ErrBadExpression", tt.sub, tt.typ, err)
			}
			continue
		}
		if err != nil || s.SubString != tt.wantSub || !slices.Equal(s.TagsSet, tt.tags) || len(s.CodeSet) != len(tt.tags) {
			t.Errorf("%q/%q: %+v %v", tt.sub, tt.typ, s, err)
		}
		for i, tag := range tt.tags {
			if s.CodeSet[i] != message.TagHashCode(tag) {
				t.Errorf("%q: code of %s", tt.sub, tag)
			}
		}
	}
}

// FuzzDecodeHeartbeat: any body decodes or fails, never panics, and what
// decodes can be registered and re-encoded.
func FuzzDecodeHeartbeat(f *testing.F) {
	for _, s := range []string{javaHeartbeat, goHeartbeat, "", "{}", `{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["1",2,null]}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		hb, err := DecodeHeartbeat(b)
		if err != nil {
			return
		}
		cm := NewConsumerManager(ManagerOptions{})
		for _, cd := range hb.ConsumerDataSet {
			cm.Register(cd.GroupName, ChannelInfo{ClientID: hb.ClientID}, cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere, cd.SubscriptionDataSet, true)
			if g, ok := cm.GroupInfo(cd.GroupName); ok {
				if _, err := protocol.Marshal(g.Subscriptions); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
