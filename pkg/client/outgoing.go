package client

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// outgoing is a message (or batch) ready for the wire: what every attempt of
// one send reuses.
type outgoing struct {
	topic             string
	body              []byte // compressed body, or the batch body
	sysFlag           int32
	flag              int32
	props             string
	batch             bool
	count             int      // messages carried
	msgID             string   // UNIQ_KEY; batches: comma-joined
	reconsumeTimes    int32    // %RETRY% topics only
	maxReconsumeTimes string   // %RETRY% topics only, "" when unset
	lite              string   // the lite topic (__LITE_TOPIC), "" for none; a batch's first
	liteBatch         []string // a batch's distinct lite topics (nil: not a lite batch)
	first             *message.Message
}

// checkTopic applies the client-side checks of Java's Validators.
func checkTopic(topic string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if protocol.IsSendForbidden(topic) {
		return fmt.Errorf("%w: sending to topic %s is forbidden", ErrInvalidMessage, topic)
	}
	return nil
}

// stampID gives m a UNIQ_KEY unless it has one, as Java does: the id is
// written into m so the caller sees it.
func (p *Producer) stampID(m *message.Message) string {
	if id := m.UniqKey(); id != "" {
		return id
	}
	id := p.ids.Next()
	m.SetProperty(message.PropertyUniqClientMessageIDKeyIdx, id)
	return id
}

// prepare validates one message, stamps its id and encodes what the wire
// needs, compressing large bodies.
func (p *Producer) prepare(m *message.Message) (*outgoing, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	if err := checkTopic(m.Topic); err != nil {
		return nil, err
	}
	if err := checkDelivery(m); err != nil {
		return nil, err
	}
	lite, err := checkLite(m)
	if err != nil {
		return nil, err
	}
	if len(m.Body) == 0 {
		return nil, fmt.Errorf("%w: the message body length is zero", ErrInvalidMessage)
	}
	if len(m.Body) > p.cfg.MaxMessageSize {
		return nil, fmt.Errorf("%w: the message body size %d is over max value %d", ErrInvalidMessage, len(m.Body), p.cfg.MaxMessageSize)
	}
	out := &outgoing{topic: m.Topic, body: m.Body, flag: m.Flag, count: 1, lite: lite, first: m}
	out.msgID = p.stampID(m)

	props := m.Properties
	if strings.HasPrefix(m.Topic, protocol.RetryGroupTopicPrefix) {
		// Java moves these two into the header for retry topics.
		props = maps.Clone(props)
		if v, ok := props[message.PropertyReconsumeTime]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q", ErrInvalidMessage, message.PropertyReconsumeTime, v)
			}
			out.reconsumeTimes = int32(n)
			delete(props, message.PropertyReconsumeTime)
		}
		if v, ok := props[message.PropertyMaxReconsumeTimes]; ok {
			out.maxReconsumeTimes = v
			delete(props, message.PropertyMaxReconsumeTimes)
		}
	}
	enc, err := message.EncodeProperties(props)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if len(enc) > message.MaxPropertiesLength {
		return nil, fmt.Errorf("%w: properties of %d bytes (max %d)", ErrInvalidMessage, len(enc), message.MaxPropertiesLength)
	}
	out.props = string(enc)

	if m.Property(message.PropertyTransactionPrepared) == "true" {
		out.sysFlag |= message.TransactionPreparedType
	}
	if shouldCompress(len(m.Body), p.cfg.CompressOver) {
		body, err := p.zlib.compress(m.Body)
		if err != nil {
			return nil, err
		}
		out.body = body
		out.sysFlag |= compressedSysFlag
	}
	return out, nil
}

// prepareBatch validates a batch with Java's rules (one topic, no delay, no
// retry topic, one WAIT value), stamps every message's id and encodes the
// batch body. Batches are never compressed.
func (p *Producer) prepareBatch(msgs []*message.Message) (*outgoing, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrInvalidMessage)
	}
	first := msgs[0]
	if first == nil {
		return nil, fmt.Errorf("%w: nil message in batch", ErrInvalidMessage)
	}
	if err := checkTopic(first.Topic); err != nil {
		return nil, err
	}
	if strings.HasPrefix(first.Topic, protocol.RetryGroupTopicPrefix) {
		return nil, fmt.Errorf("%w: retry group topic is not supported for batching", ErrInvalidMessage)
	}
	wait := first.Property(message.PropertyWaitStoreMsgOK)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		switch {
		case m == nil:
			return nil, fmt.Errorf("%w: nil message in batch", ErrInvalidMessage)
		case m.Topic != first.Topic:
			return nil, fmt.Errorf("%w: the topic of the messages in one batch should be the same", ErrInvalidMessage)
		case m.Property(message.PropertyDelayTimeLevel) != "":
			return nil, fmt.Errorf("%w: TimeDelayLevel is not supported for batching", ErrInvalidMessage)
		case m.Property(message.PropertyWaitStoreMsgOK) != wait:
			return nil, fmt.Errorf("%w: the waitStoreMsgOK of the messages in one batch should be the same", ErrInvalidMessage)
		case len(m.Body) == 0:
			return nil, fmt.Errorf("%w: batch message %d has an empty body", ErrInvalidMessage, i)
		}
		ids[i] = p.stampID(m)
	}
	lites, err := checkBatchLite(msgs)
	if err != nil {
		return nil, err
	}
	body, err := encodeBatch(msgs)
	if err != nil {
		return nil, err
	}
	if len(body) > p.cfg.MaxMessageSize {
		return nil, fmt.Errorf("%w: the batch body size %d is over max value %d", ErrInvalidMessage, len(body), p.cfg.MaxMessageSize)
	}
	// The batch itself carries an id (and WAIT) in the header like Java's
	// MessageBatch; the broker stores only the inner properties.
	hdr := map[string]string{message.PropertyUniqClientMessageIDKeyIdx: p.ids.Next()}
	if wait != "" {
		hdr[message.PropertyWaitStoreMsgOK] = wait
	}
	enc, err := message.EncodeProperties(hdr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	return &outgoing{
		topic: first.Topic,
		body:  body,
		props: string(enc),
		batch: true,
		count: len(msgs),
		msgID: strings.Join(ids, ","),
		lite:  liteFirst(lites),
		first: first,

		liteBatch: lites,
	}, nil
}

func liteFirst(lites []string) string {
	if len(lites) == 0 {
		return ""
	}
	return lites[0]
}
