package admin

import (
	"context"
	"errors"
	"strconv"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Pop state (GET_POP_STATUS, an rmq-go extension: Apache brokers answer
// REQUEST_CODE_NOT_SUPPORTED). The body is protocol.PopStatusBody, shared
// with the broker that writes it.

// PopStatusQuery selects what PopStatus reports.
type PopStatusQuery struct {
	Group string // "" = every group
	Topic string // the consumed topic; "" = every topic
	// Detail asks for per-queue rows (PopGroupStatus.Queues), at most
	// MaxQueues of them (0: the broker's default, 1000).
	Detail    bool
	MaxQueues int
}

func (q PopStatusQuery) ext() map[string]string {
	ext := map[string]string{}
	if q.Group != "" {
		ext[protocol.PopStatusFieldGroup] = q.Group
	}
	if q.Topic != "" {
		ext[protocol.PopStatusFieldTopic] = q.Topic
	}
	if q.Detail {
		ext[protocol.PopStatusFieldDetail] = "true"
	}
	if q.MaxQueues > 0 {
		ext[protocol.PopStatusFieldMaxQueues] = strconv.Itoa(q.MaxQueues)
	}
	return ext
}

// ErrPopStatusUnsupported: the broker does not know GET_POP_STATUS (it is
// not an rmq-go broker, or an older one).
var ErrPopStatusUnsupported = errors.New("the broker does not support pop status (GET_POP_STATUS is an rmq-go extension)")

// PopStatus reads one broker's pop state: per group and topic the
// in-flight (popped, un-acked) messages, blocked orderly queues, backlog
// and retry backlog; broker-wide the revive service's progress.
func (c *Client) PopStatus(ctx context.Context, brokerAddr string, q PopStatusQuery) (*protocol.PopStatusBody, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetPopStatus, q.ext(), nil)
	if err != nil {
		if IsCode(err, code.RequestCodeNotSupported) {
			return nil, errors.Join(ErrPopStatusUnsupported, err)
		}
		return nil, err
	}
	var b protocol.PopStatusBody
	if err := decodeBody(resp, brokerAddr, code.GetPopStatus, &b); err != nil {
		return nil, err
	}
	if b.Groups == nil {
		b.Groups = []protocol.PopGroupStatus{}
	}
	return &b, nil
}

// BrokerPopStatus is one broker's answer in PopStatusOf.
type BrokerPopStatus struct {
	Addr   string
	Status *protocol.PopStatusBody // nil when Err is set
	Err    error
}

// PopStatusOf asks each broker in turn; a broker that fails does not stop
// the others (its Err is set).
func (c *Client) PopStatusOf(ctx context.Context, addrs []string, q PopStatusQuery) []BrokerPopStatus {
	out := make([]BrokerPopStatus, 0, len(addrs))
	for _, a := range addrs {
		st, err := c.PopStatus(ctx, a, q)
		out = append(out, BrokerPopStatus{Addr: a, Status: st, Err: err})
	}
	return out
}
