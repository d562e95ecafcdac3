package client

import (
	"fmt"

	"github.com/rmqgo/rmq/pkg/message"
)

// encodeBatch writes the SEND_BATCH_MESSAGE body (docs/protocol.md §5.3): one
// item per message with its flag, body and properties. Callers have checked
// and id-stamped the messages.
func encodeBatch(msgs []*message.Message) ([]byte, error) {
	size := 0
	for _, m := range msgs {
		size += 22 + len(m.Body) + 64 // fixed part, body, typical properties
	}
	body := make([]byte, 0, size)
	for i, m := range msgs {
		var err error
		if body, err = message.AppendBatchItem(body, m.Flag, m.Body, m.Properties); err != nil {
			return nil, fmt.Errorf("%w: batch message %d: %w", ErrInvalidMessage, i, err)
		}
	}
	return body, nil
}
