// Package subscribe answers LITE_SUBSCRIPTION_CTL (200071, docs/lite-topics.md
// §5.1): clients (or a proxy on their behalf) add and remove lite
// subscriptions. It remembers each client's connection to push
// NOTIFY_UNSUBSCRIBE_LITE (200073, §5.5) when an exclusive group evicts it,
// and drops subscriptions not refreshed within
// liteSubscriptionCheckTimeoutMills.
package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Actions of a LiteSubscriptionDTO.
const (
	PartialAdd     = "PARTIAL_ADD"
	PartialRemove  = "PARTIAL_REMOVE"
	CompleteAdd    = "COMPLETE_ADD"
	CompleteRemove = "COMPLETE_REMOVE"
)

// DTO is LiteSubscriptionDTO.
type DTO struct {
	Action       string                 `json:"action"`
	ClientID     string                 `json:"clientId"`
	Group        string                 `json:"group"`
	LiteTopicSet []string               `json:"liteTopicSet"`
	OffsetOption *registry.OffsetOption `json:"offsetOption,omitempty"`
	Topic        string                 `json:"topic"`
	Version      int64                  `json:"version"`
}

// Body is LiteSubscriptionCtlRequestBody.
type Body struct {
	SubscriptionSet []DTO `json:"subscriptionSet"`
}

// Deps are the processor's collaborators; Config, Meta and Registry are
// required.
type Deps struct {
	Config   func() *config.Config
	Meta     *meta.Source
	Registry *registry.Registry
	Logger   *slog.Logger
}

// Processor is safe for concurrent use.
type Processor struct {
	d   Deps
	log *slog.Logger

	mu       sync.Mutex
	channels map[registry.ClientKey]*remoting.Channel

	expiry loop.Runner
}

// New builds the processor. Install Notify as the registry's
// NotifyUnsubscribe (registry.Options) to push evictions.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Meta == nil || d.Registry == nil {
		return nil, errors.New("subscribe: Config, Meta and Registry are required")
	}
	defaults.Logger(&d.Logger)
	return &Processor{d: d, log: d.Logger, channels: map[registry.ClientKey]*remoting.Channel{}}, nil
}

// Register installs the handler on the admin executor.
func (p *Processor) Register(r processor.Registrar) {
	r.RegisterProcessor(code.LiteSubscriptionCtl, p.handle, processor.PoolAdmin)
}

func (p *Processor) handle(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) == 0 {
		return nil, remoting.Errorf(code.IllegalOperation, "Request body is null.")
	}
	var body Body
	if err := protocol.Unmarshal(req.Body, &body); err != nil {
		return nil, remoting.Errorf(code.IllegalOperation, "LiteSubscriptionCtlRequestBody: %v", err)
	}
	if len(body.SubscriptionSet) == 0 {
		return nil, remoting.Errorf(code.IllegalOperation, "LiteSubscriptionCtlRequestBody is empty.")
	}
	for _, dto := range body.SubscriptionSet {
		if err := p.apply(ch, dto); err != nil {
			return nil, err
		}
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// apply runs one DTO; blank ids are skipped as upstream does.
func (p *Processor) apply(ch *remoting.Channel, dto DTO) error {
	clientID, group, topic := strings.TrimSpace(dto.ClientID), strings.TrimSpace(dto.Group), strings.TrimSpace(dto.Topic)
	if clientID == "" || group == "" || topic == "" {
		p.log.Warn("lite subscription entry without clientId, group or topic", "clientId", dto.ClientID, "group", dto.Group, "topic", dto.Topic)
		return nil
	}
	key := registry.ClientKey{ClientID: clientID, Group: group}
	if dto.Action == CompleteRemove {
		p.d.Registry.RemoveComplete(key)
		p.forget(key)
		return nil
	}
	lmqs, err := p.lmqNames(topic, dto.LiteTopicSet)
	if err != nil {
		return err
	}
	switch dto.Action {
	case PartialAdd, CompleteAdd:
		if err := p.checkGroup(group, topic); err != nil {
			return err
		}
		p.remember(key, ch)
		if dto.Action == PartialAdd {
			err = p.d.Registry.AddPartial(key, topic, lmqs, dto.OffsetOption)
		} else {
			err = p.d.Registry.AddComplete(key, topic, lmqs)
		}
	case PartialRemove:
		p.d.Registry.RemovePartial(key, lmqs)
	default:
		return remoting.Errorf(code.IllegalOperation, "unknown lite subscription action %q", dto.Action)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, registry.ErrQuota):
		return remoting.Errorf(code.LiteSubscriptionQuotaExceeded, "%v", err)
	case errors.Is(err, registry.ErrIllegalState):
		return remoting.Errorf(code.IllegalOperation, "%v", err)
	}
	return remoting.Errorf(code.SystemError, "%v", err)
}

// lmqNames converts bare lite names; an illegal name fails the request
// [our choice: upstream's broker trusts the proxy] so no LMQ state is ever
// keyed by a name that cannot exist.
func (p *Processor) lmqNames(parent string, lites []string) ([]string, error) {
	out := make([]string, 0, len(lites))
	max := p.d.Config().MaxLiteTopicSize
	for _, l := range lites {
		if err := naming.ValidateLite(l, max); err != nil {
			return nil, remoting.Errorf(code.InvalidParameter, "illegal lite topic %q: %v", l, err)
		}
		lmq, _ := naming.LMQName(parent, l)
		out = append(out, lmq)
	}
	return out, nil
}

// checkGroup: the group exists, may consume, and is bound to topic.
func (p *Processor) checkGroup(group, topic string) error {
	g, ok := p.d.Meta.Group(group)
	if !ok {
		return remoting.Errorf(code.IllegalOperation, "Consumer group [%s] does not exist.", group)
	}
	if !g.ConsumeEnable {
		return remoting.Errorf(code.IllegalOperation, "Consumer group is not allowed to consume.")
	}
	if g.BindTopic != topic {
		return remoting.Errorf(code.IllegalOperation, "group [%s] is not bound to lite topic [%s] (lite.bind.topic=%q)", group, topic, g.BindTopic)
	}
	tc, ok := p.d.Meta.Topic(topic)
	if !ok || !meta.IsParent(tc) {
		return remoting.Errorf(code.IllegalOperation, "topic [%s] is not a LITE topic", topic)
	}
	return nil
}

func (p *Processor) remember(k registry.ClientKey, ch *remoting.Channel) {
	if ch == nil {
		return
	}
	p.mu.Lock()
	p.channels[k] = ch
	p.mu.Unlock()
}

func (p *Processor) forget(k registry.ClientKey) {
	p.mu.Lock()
	delete(p.channels, k)
	p.mu.Unlock()
}

// Notify pushes NOTIFY_UNSUBSCRIBE_LITE to an evicted client (one-way, over
// the connection of its last subscription request).
func (p *Processor) Notify(k registry.ClientKey, lite string) {
	p.mu.Lock()
	ch := p.channels[k]
	p.mu.Unlock()
	if ch == nil || !ch.IsActive() {
		return
	}
	req := remoting.NewRequest(code.NotifyUnsubscribeLite, map[string]string{
		"liteTopic":     lite,
		"consumerGroup": k.Group,
		"clientId":      k.ClientID,
	}, nil)
	req.MarkOneway()
	if err := ch.InvokeOneway(req); err != nil {
		p.log.Debug("notify unsubscribe lite", "clientId", k.ClientID, "group", k.Group, "liteTopic", lite, "err", err)
	}
}

// Expire drops clients not refreshed within liteSubscriptionCheckTimeoutMills.
func (p *Processor) Expire() int {
	gone := p.d.Registry.Expire(p.d.Config().LiteSubscriptionCheckTimeoutMills)
	for _, k := range gone {
		p.forget(k)
	}
	if len(gone) > 0 {
		p.log.Info("dropped stale lite subscriptions", "clients", len(gone))
	}
	return len(gone)
}

// Start runs the expiry loop (every liteSubscriptionCheckInterval).
func (p *Processor) Start() {
	p.expiry.Start(func(stop <-chan struct{}) {
		loop.Repeat(stop, func() time.Duration {
			return defaults.Or(p.d.Config().LiteSubscriptionCheckInterval, 2*time.Minute)
		}, func() { p.Expire() })
	})
}

// Close stops the expiry loop.
func (p *Processor) Close() {
	p.expiry.Stop()
}

// String helps logs.
func (d DTO) String() string {
	return fmt.Sprintf("%s client=%s group=%s topic=%s lites=%d", d.Action, d.ClientID, d.Group, d.Topic, len(d.LiteTopicSet))
}
