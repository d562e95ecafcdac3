package schedule

import (
	"fmt"
	"strconv"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
)

// PropertyTimerKey marks a message the delivery service stored: its value
// "deliverMs,commitLogOffset" is the pending-timer key it came from. After a
// crash, recovery finds these records in the CommitLog tail and removes
// their keys, so a delivery whose key deletion was lost is not repeated.
// Consumers see it as one more property; messages entering the schedule
// path lose it.
const PropertyTimerKey = "__TIMER_KEY"

// timerProps are the producer's timer properties, in Java's order of
// precedence.
func timerProps() [3]string {
	return [3]string{message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerDeliverMS}
}

// Schedule is the send path's ScheduleHook (Java's
// HookUtils.handleScheduleMessage): a message with DELAY > 0 is parked in
// SCHEDULE_TOPIC_XXXX queue level−1 (levels above the table are clamped;
// timer properties are dropped, as Java does); a message with
// TIMER_DELAY_SEC, TIMER_DELAY_MS or TIMER_DELIVER_MS (first present wins,
// in that order) is parked in rmq_sys_wheel_timer queue 0 with TIMER_OUT_MS
// = its delivery time. Both keep the real topic and queue in
// REAL_TOPIC/REAL_QID. A timer value that is not a non-negative integer, a
// delivery time more than MaxDelay ahead, or a timer while timerWheelEnable
// is off is MESSAGE_ILLEGAL; a delivery time already past leaves the message
// for immediate delivery (Java), except for a cancellation (a timer with
// TIMER_DEL_UNIQKEY, see cancel.go): that is MESSAGE_ILLEGAL. Messages
// that already carry TIMER_OUT_MS (a re-sent delivered timer message) are
// not timers (Java).
func (s *Service) Schedule(msg *message.Message) error {
	if msg.Properties == nil {
		return nil
	}
	props := msg.Properties
	delete(props, PropertyTimerKey)
	if lvl := message.DelayLevel(props); lvl > 0 {
		levels := s.levelsNow()
		if lvl > len(levels) {
			lvl = len(levels)
		}
		for _, k := range timerProps() {
			delete(props, k)
		}
		props[message.PropertyDelayTimeLevel] = strconv.Itoa(lvl)
		park(msg, ScheduleTopic, int32(lvl-1))
		return nil
	}
	if _, ok := props[message.PropertyTimerOutMS]; ok || msg.Topic == TimerTopic {
		return nil
	}
	key, val := "", ""
	for _, k := range timerProps() {
		if v, ok := props[k]; ok {
			key, val = k, v
			break
		}
	}
	if key == "" {
		return nil
	}
	if !s.o.Config().TimerWheelEnable {
		return fmt.Errorf("%w: accurate timer message is not enabled, timerWheelEnable is false", store.ErrMessageIllegal)
	}
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: bad timer property %s=%q: want a non-negative integer", store.ErrMessageIllegal, key, val)
	}
	now := s.now().UnixMilli()
	maxMs := s.o.MaxDelay.Milliseconds()
	var deliverMs int64
	switch key {
	case message.PropertyTimerDelaySec:
		if n > maxMs/1000+1 {
			return s.tooFar(key, val)
		}
		deliverMs = now + n*1000
	case message.PropertyTimerDelayMS:
		if n > maxMs+1 {
			return s.tooFar(key, val)
		}
		deliverMs = now + n
	default:
		deliverMs = n
	}
	if deliverMs <= now {
		if _, ok := props[message.PropertyTimerDelUniqKey]; ok {
			// A cancellation for a time already past can cancel nothing
			// (Java: WHEEL_TIMER_MSG_ILLEGAL).
			return fmt.Errorf("%w: timer message illegal, the delay time should not be bigger than the max delay %dms; "+
				"or if set del msg, the delay time should be bigger than the current time", store.ErrMessageIllegal, maxMs)
		}
		return nil
	}
	if deliverMs-now > maxMs {
		return s.tooFar(key, val)
	}
	props[message.PropertyTimerOutMS] = strconv.FormatInt(deliverMs, 10)
	park(msg, TimerTopic, 0)
	return nil
}

func (s *Service) tooFar(key, val string) error {
	return fmt.Errorf("%w: timer %s=%s is beyond the maximum delay %v", store.ErrMessageIllegal, key, val, s.o.MaxDelay)
}

// park moves msg to a schedule queue, remembering where it belongs.
func park(msg *message.Message, topic string, qid int32) {
	msg.Properties[message.PropertyRealTopic] = msg.Topic
	msg.Properties[message.PropertyRealQueueID] = strconv.Itoa(int(msg.QueueID))
	msg.Topic = topic
	msg.QueueID = qid
}
