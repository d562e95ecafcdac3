package send

import (
	"context"
	"fmt"
	"github.com/rmqgo/rmq/broker/metrics"
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// maxTopicLenV1 is the longest topic a v1 record holds (Byte.MAX_VALUE);
// Java refuses longer batch topics.
const maxTopicLenV1 = 127

// sendBatch stores a SEND_BATCH_MESSAGE body (docs/protocol.md §5.3) as separate
// messages in one queue with consecutive offsets (Java's sendBatchMessage).
//
// Every item shares the header's topic, queue, sysFlag (compressed bit
// included: batches are sent uncompressed, and whatever the header says is
// kept), born time and reconsume times, and keeps only its own properties, as
// Java's batch encoder writes them: the header's properties are not merged
// in. Unlike Java's broker we give an item without UNIQ_KEY one (client-go
// sends none), so consumers see a stable client id.
//
// No batchUniqId is answered: Java sets it only for inner-batch (BatchCQ)
// topics, and a Java client seeing it reports that id instead of the items'
// ids.
func (p *Processor) sendBatch(ctx context.Context, ch *remoting.Channel, req *remoting.Command, h *sendHeader) (*remoting.Command, error) {
	cfg := p.d.Config()
	tc, queueID, err := p.admit(cfg, ch, h, true)
	if err != nil {
		return nil, err
	}
	if len(h.topic) > maxTopicLenV1 {
		return nil, fmt.Errorf("%w: message topic length too long %d", ErrMessageIllegal, len(h.topic))
	}
	if strings.HasPrefix(h.topic, protocol.RetryGroupTopicPrefix) {
		return nil, fmt.Errorf("%w: batch request does not support retry group %s", ErrMessageIllegal, h.topic)
	}
	sysFlag := h.sysFlag
	if tc.TopicFilterType == protocol.MultiTag {
		sysFlag |= message.FlagMultiTags
	}
	// The store refuses both for a batch (CommitLog.asyncPutMessages).
	if message.TransactionType(sysFlag) != message.TransactionNotType {
		return nil, fmt.Errorf("%w: batch messages do not support transactions (sysFlag %#x)", ErrMessageIllegal, sysFlag)
	}
	hp := decodeProps(h.properties, 0)
	if message.DelayLevel(hp) > 0 {
		return nil, fmt.Errorf("%w: batch messages do not support delay levels", ErrMessageIllegal)
	}
	// Java bounds the whole batch body by maxMessageSize.
	if err := checkBody(cfg, len(req.Body)); err != nil {
		return nil, err
	}
	msgs, err := message.DecodeBatchRaw(req.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: batch body: %w", ErrMessageIllegal, err)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: batch body holds no message", ErrMessageIllegal)
	}
	born, store := bornHost(ctx, ch), p.storeHost()
	for i, m := range msgs {
		m.Topic = h.topic
		m.QueueID = queueID
		m.SysFlag = sysFlag
		m.BornTimestamp = h.bornTimestamp
		m.BornHost = born
		m.StoreHost = store
		m.ReconsumeTimes = h.reconsumeTimes
		if plainProps(m.RawProperties) {
			// Stored as the map would be: keys sorted.
			sortPlainInPlace(m.RawProperties)
			// Nothing to strip, add or refuse. The
			// checks below see no property (a nil map) and decide as
			// they would with these: a NORMAL message, not lite.
			if err := p.checkMessage(&tc, m, sysFlag); err != nil {
				return nil, fmt.Errorf("batch item %d: %w", i, err)
			}
			continue
		}
		m.Properties = message.DecodeProperties(m.RawProperties)
		m.RawProperties = nil
		if m.Properties == nil {
			m.Properties = make(map[string]string, 1)
		}
		stripReserved(m.Properties)
		if m.Properties[message.PropertyUniqClientMessageIDKeyIdx] == "" {
			m.Properties[message.PropertyUniqClientMessageIDKeyIdx] = p.d.UniqIDs.Next()
		}
		// A delayed item would otherwise be delivered at once: refuse it
		// as clients do [our choice; Java's broker checks the header only].
		if message.DelayLevel(m.Properties) > 0 {
			return nil, fmt.Errorf("%w: batch item %d: batch messages do not support delay levels", ErrMessageIllegal, i)
		}
		if err := p.checkMessage(&tc, m, sysFlag); err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
		if err := ApplyLite(&tc, m.Properties, cfg.MaxLiteTopicSize); err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
		if err := checkPropsLen(m.Properties); err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
	}
	res, err := p.d.Store.PutMessages(ctx, msgs)
	if err == nil && len(msgs) > 0 {
		size := 0
		for _, m := range msgs {
			size += len(m.Body)
		}
		p.putStats(msgs[0].Topic, len(msgs), size)
	}
	resp, err := p.putResponse(ctx, req, cfg, res, err, hp[message.PropertyWaitStoreMsgOK], queueID, hp[message.PropertyUniqClientMessageIDKeyIdx], true)
	if err == nil && p.d.MessagesIn != nil {
		p.d.MessagesIn(h.topic, metrics.TypeOf(hp), len(msgs), res.End-res.PhysicalOffset)
	}
	return resp, err
}
