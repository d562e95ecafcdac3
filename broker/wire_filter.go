package broker

import (
	"fmt"

	"github.com/rmqgo/rmq/broker/filter"
	"github.com/rmqgo/rmq/broker/msgtype"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireFilter plugs in message filtering and message-type rules (see
// wiring):
//
//   - SQL92 subscriptions: the pull processor compiles them with
//     filter.Factory (enablePropertyFilter, bounded expression cache) and
//     evaluates them on the stored properties; TAG subscriptions keep the
//     pull processor's own tag-code filter. A push consumer's pull carries
//     no expression (client-go even labels it TAG): the pull processor takes
//     the group's SQL92 subscription from its heartbeat registration.
//   - CHECK_CLIENT_CONFIG (46), which Java consumers send at start for SQL92
//     subscriptions, on the admin (client management) executor.
//   - The send path's message-type check and per-type size limits
//     (msgtype.Checker).
//
// It returns the filter factory (for the pull and pop processors) and the
// send path's message-type check.
func (b *Broker) wireFilter(w *wiring) (*filter.Factory, send.MessageChecker, error) {
	f, err := filter.New(filter.Options{Config: b.cfg.Get, Logger: w.log.With("component", "filter")})
	if err != nil {
		return nil, nil, fmt.Errorf("broker: filter: %w", err)
	}
	b.RegisterProcessor(code.CheckClientConfig, f.HandleCheckClientConfig, processor.PoolAdmin)
	return f, msgtype.Checker{Config: b.cfg.Get}, nil
}
