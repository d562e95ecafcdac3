package recall

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type topics map[string]bool

func (t topics) Get(name string) (protocol.TopicConfig, bool) {
	return protocol.NewTopicConfig(name), t[name]
}

// parker records what it parks; err refuses.
type parker struct {
	got []*message.Message
	err error
}

func (p *parker) Schedule(m *message.Message) error {
	if p.err != nil {
		return p.err
	}
	p.got = append(p.got, m)
	m.Topic = schedule.TimerTopic
	return nil
}

type sink struct{ err error }

func (s sink) PutMessage(context.Context, *message.Message) (store.PutResult, error) {
	return store.PutResult{}, s.err
}

func TestRecallMessage(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	at := func(ms int64) string { return strconv.FormatInt(now.UnixMilli()+ms, 10) }
	handle := func(topic, broker, ts string) string {
		return schedule.RecallHandle{Topic: topic, BrokerName: broker, Timestamp: ts, MessageID: "UNIQ1"}.Encode()
	}
	tests := []struct {
		name       string
		mutate     func(*config.Config)
		topic      string
		handle     string
		scheduleEr error
		storeErr   error
		wantCode   int32
		wantRemark string
	}{
		{"recalled", nil, "T", handle("T", "broker-a", at(5000)), nil, nil, code.Success, ""},
		{"flush timeout still stored", nil, "T", handle("T", "broker-a", at(5000)), nil, store.ErrFlushTimeout, code.Success, ""},
		{"disabled", func(c *config.Config) { c.RecallMessageEnable = false }, "T", handle("T", "broker-a", at(5000)), nil, nil,
			code.NoPermission, "recall failed, operation is forbidden"},
		{"slave", func(c *config.Config) { c.BrokerRole = config.RoleSlave }, "T", handle("T", "broker-a", at(5000)), nil, nil,
			code.SlaveNotAvailable, "recall failed, broker service not available"},
		{"not writable", func(c *config.Config) {
			c.BrokerPermission, c.AllowRecallWhenBrokerNotWriteable = protocol.PermRead, false
		},
			"T", handle("T", "broker-a", at(5000)), nil, nil, code.ServiceNotAvailable, "recall failed, broker service not available"},
		{"not writable but allowed", func(c *config.Config) { c.BrokerPermission = protocol.PermRead }, "T",
			handle("T", "broker-a", at(5000)), nil, nil, code.Success, ""},
		{"unknown topic", nil, "Nope", handle("Nope", "broker-a", at(5000)), nil, nil, code.TopicNotExist, "recall failed, the topic[Nope] not exist"},
		{"garbage handle", nil, "T", "%%%", nil, nil, code.IllegalOperation, "recall handle is invalid"},
		{"topic mismatch", nil, "T", handle("U", "broker-a", at(5000)), nil, nil, code.IllegalOperation, "recall failed, topic not match"},
		{"other broker", nil, "T", handle("T", "broker-b", at(5000)), nil, nil, code.IllegalOperation, "recall failed, broker service not available"},
		{"past", nil, "T", handle("T", "broker-a", at(-1)), nil, nil, code.IllegalOperation, "recall failed, timestamp invalid"},
		{"beyond max delay", nil, "T", handle("T", "broker-a", at(41*24*3600*1000)), nil, nil, code.IllegalOperation, "recall failed, timestamp invalid"},
		{"not a number", nil, "T", handle("T", "broker-a", "soon"), nil, nil, code.IllegalOperation, "recall failed, timestamp invalid"},
		{"marker refused", nil, "T", handle("T", "broker-a", at(5000)), errors.New("no"), nil, code.SystemError, "recall failed, execute error"},
		{"store failed", nil, "T", handle("T", "broker-a", at(5000)), nil, errors.New("disk"), code.SystemError, "recall failed, execute error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
			c.RecallMessageEnable = true
			if tc.mutate != nil {
				tc.mutate(c)
			}
			pk := &parker{err: tc.scheduleEr}
			p, err := New(Deps{Config: func() *config.Config { return c }, Topics: topics{"T": true, "U": true, "Nope": false},
				Schedule: pk, Store: sink{err: tc.storeErr}, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			req := remoting.NewRequest(code.RecallMessage, map[string]string{"topic": tc.topic, "recallHandle": tc.handle, "producerGroup": "pg"}, nil)
			resp, err := p.Handle(context.Background(), nil, req)
			if err != nil {
				resp = remoting.ResponseFromError(req, err)
			}
			if resp.Code != tc.wantCode || (tc.wantRemark != "" && resp.Remark != tc.wantRemark) {
				t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
			if tc.wantCode != code.Success {
				return
			}
			if resp.Ext("msgId") != "UNIQ1" || len(pk.got) != 1 {
				t.Fatalf("ext %v, parked %d", resp.ExtFields, len(pk.got))
			}
			m := pk.got[0]
			if m.Properties[message.PropertyTimerDelUniqKey] != "T+UNIQ1" || m.Properties[message.PropertyTimerDeliverMS] != at(5000) ||
				m.Properties[message.PropertyProducerGroup] != "pg" || m.Tags() != schedule.RecallTag {
				t.Fatalf("marker %v", m.Properties)
			}
		})
	}
	// Missing header fields.
	p, _ := New(Deps{Config: func() *config.Config {
		return config.Default(config.Host{Hostname: "b", IP: "127.0.0.1", Home: t.TempDir()})
	},
		Topics: topics{}, Schedule: &parker{}, Store: sink{}})
	req := remoting.NewRequest(code.RecallMessage, map[string]string{"topic": "T"}, nil)
	if _, err := p.Handle(context.Background(), nil, req); remoting.ResponseFromError(req, err).Code != code.InvalidParameter {
		t.Fatalf("missing recallHandle: %v", err)
	}
}
