package statictopic

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// UpdateAndCreateStaticTopic answers UPDATE_AND_CREATE_STATIC_TOPIC (513,
// docs/static-topics.md §7.10): the topic config from the header and the mapping detail from the
// body are applied together or not at all, then the broker registers.
func (s *Service) UpdateAndCreateStaticTopic(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if s.d.Topics == nil {
		return nil, remoting.Errorf(code.SystemError, "static topics are not available on this broker")
	}
	f := protocol.FieldsOf(req.ExtFields)
	name := f.Str("topic")
	tc := protocol.TopicConfigOf(f, name)
	force := f.OptBool("force", false)
	if err := f.Err(); err != nil {
		return nil, processor.BadRequestf("%v", err)
	}
	// order and attributes are not taken from the header (Java); no
	// attribute modification keeps the stored ones.
	tc.Order = false
	tc.Attributes = map[string]string{}
	if err := protocol.ValidateTopic(name); err != nil {
		return nil, processor.BadRequestf("%v", err)
	}
	if s.d.Config().ValidateSystemTopicWhenUpdateTopic && s.d.Topics.IsSystemTopic(name) {
		return nil, processor.BadRequestf("the topic[%s] is conflict with system topic", name)
	}
	if tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 || tc.Perm < 0 || tc.Perm > 7 {
		return nil, processor.BadRequestf("readQueueNums %d, writeQueueNums %d, perm %d out of range", tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm)
	}
	if tc.TopicFilterType != protocol.SingleTag && tc.TopicFilterType != protocol.MultiTag {
		return nil, processor.BadRequestf("topicFilterType %q (want SINGLE_TAG or MULTI_TAG)", tc.TopicFilterType)
	}
	if len(req.Body) == 0 {
		return nil, processor.BadRequestf("empty body: want the TopicQueueMappingDetail of %s", name)
	}
	var d protocol.TopicQueueMappingDetail
	if err := protocol.Unmarshal(req.Body, &d); err != nil {
		return nil, processor.BadRequestf("decode TopicQueueMappingDetail: %v", err)
	}
	if d.Topic != "" && d.Topic != name {
		return nil, processor.BadRequestf("the mapping is for topic %q, the header for %q", d.Topic, name)
	}
	d.Topic = name
	// Segments on this broker must be physical queues of the topic config.
	for g, items := range d.HostedQueues {
		for _, it := range items {
			if it.Bname == s.me && it.QueueID >= tc.WriteQueueNums {
				return nil, processor.BadRequestf("logic queue %d: item gen %d uses queue %d, but writeQueueNums is %d", g, it.Gen, it.QueueID, tc.WriteQueueNums)
			}
		}
	}
	err := s.d.Mappings.Update(d, UpdateOptions{Force: force, Flush: true, Before: func() error {
		_, err := s.d.Topics.Update(tc)
		return err
	}})
	if err != nil {
		if errors.Is(err, ErrInvalidMapping) {
			return nil, processor.BadRequest(err)
		}
		return nil, remoting.Errorf(code.SystemError, "update static topic %s: %v", name, err)
	}
	if s.d.Registered != nil {
		s.d.Registered(ctx)
	}
	s.wakeDeposed(name)
	if s.d.Updated != nil {
		s.d.Updated(name)
	}
	remote := ""
	if ch != nil {
		remote = ch.RemoteAddr()
	}
	s.log.Info("update or create static topic", "topic", name, "epoch", d.Epoch, "read", tc.ReadQueueNums, "write", tc.WriteQueueNums,
		"force", force, "remote", remote)
	return remoting.NewResponse(req, code.Success, ""), nil
}

// wakeDeposed answers at once the pulls parked on physical queues of topic
// that no longer lead their logic queue here. They were parked while this
// broker led; no message arrives on such a queue any more, so they would
// otherwise hang until their deadline (a consumer's 15 s) before learning
// NOT_LEADER_FOR_QUEUE. Re-run, they answer 501 and the client moves to the
// new leader after its next route refresh.
func (s *Service) wakeDeposed(topic string) {
	d, ok := s.d.Mappings.Get(topic)
	if !ok {
		return
	}
	for _, qid := range deposedQueues(d, s.me) {
		s.hold.WakeQueue(topic, qid, math.MaxInt64)
	}
}

// deposedQueues lists the physical queues of broker me that hold a segment
// of a logic queue but not its leader segment, ascending.
func deposedQueues(d protocol.TopicQueueMappingDetail, me string) []int32 {
	seen := map[int32]bool{}
	for _, items := range d.HostedQueues {
		l := leaderOf(items)
		for _, it := range items {
			if it.Bname == me && (l.Bname != me || it.Gen != l.Gen) {
				seen[int32(it.QueueID)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
