package message

import (
	"strconv"
	"strings"
	"time"
)

// Producer-side setters, named after Java's Message setters. They only write
// properties; the broker interprets them (docs/protocol.md §5.5, §6.4).

// SetTags sets the TAGS property (a single tag; consumers filter on its
// hash). An empty tag removes it.
func (m *Message) SetTags(tag string) { m.setOrDelete(PropertyTags, tag) }

// SetKeys sets the KEYS property: business keys joined by spaces, indexed by
// the broker for QUERY_MESSAGE. Empty keys are skipped; no keys removes it.
func (m *Message) SetKeys(keys ...string) {
	var kept []string
	for _, k := range keys {
		if k = strings.TrimSpace(k); k != "" {
			kept = append(kept, k)
		}
	}
	m.setOrDelete(PropertyKeys, strings.Join(kept, KeySeparator))
}

// SetDelayTimeLevel asks the broker to deliver the message after delay level
// n (1..18 by default: 1s 5s 10s 30s 1m ... 2h). n ≤ 0 removes the property.
func (m *Message) SetDelayTimeLevel(n int) {
	if n <= 0 {
		m.setOrDelete(PropertyDelayTimeLevel, "")
		return
	}
	m.SetProperty(PropertyDelayTimeLevel, strconv.Itoa(n))
}

// DelayTimeLevel returns the DELAY property (0 when absent or malformed).
func (m *Message) DelayTimeLevel() int { return DelayLevel(m.Properties) }

// SetDeliverTime makes it a timer message (5.x) delivered at t
// (TIMER_DELIVER_MS, epoch milliseconds; the broker's precision is 1 s by
// default and its maximum delay 3 days).
func (m *Message) SetDeliverTime(t time.Time) {
	m.SetProperty(PropertyTimerDeliverMS, strconv.FormatInt(t.UnixMilli(), 10))
}

// SetDelayTime makes it a timer message delivered d after the broker stores
// it (TIMER_DELAY_MS). Unlike SetDeliverTime it does not depend on the
// producer's clock.
func (m *Message) SetDelayTime(d time.Duration) {
	m.SetProperty(PropertyTimerDelayMS, strconv.FormatInt(d.Milliseconds(), 10))
}

// SetWaitStoreMsgOK sets the WAIT property: whether a sync-flush broker
// answers only after the message is flushed (the broker's default is true).
func (m *Message) SetWaitStoreMsgOK(wait bool) {
	m.SetProperty(PropertyWaitStoreMsgOK, strconv.FormatBool(wait))
}

// SetLiteTopic names the lite topic of a message sent to a LITE parent
// topic (__LITE_TOPIC, Java's setLiteTopic): the broker also stores it in
// the light message queue of (parent, name), which lite consumers
// subscribe to. Names are letters, digits, '_' and '-', at most 64 bytes;
// producers check them. Empty removes the property.
func (m *Message) SetLiteTopic(name string) { m.setOrDelete(PropertyLiteTopic, name) }

// LiteTopic returns the __LITE_TOPIC property ("" when absent).
func (m *Message) LiteTopic() string { return m.Properties[PropertyLiteTopic] }

func (m *Message) setOrDelete(key, value string) {
	if value == "" {
		delete(m.Properties, key)
		return
	}
	m.SetProperty(key, value)
}
