package filter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// ErrPropertyFilterDisabled: an SQL92 subscription on a broker with
// enablePropertyFilter=false. Its text is Java's remark; Compile returns it
// inside a *remoting.CodeError with Java's code, SYSTEM_ERROR.
var ErrPropertyFilterDisabled = errors.New("The broker does not support consumer to filter message by SQL92")

// ErrUnsupportedType: an expression type other than TAG and SQL92.
var ErrUnsupportedType = errors.New("unsupported expression type")

// Options configure a Factory.
type Options struct {
	// Config is the live broker configuration (enablePropertyFilter).
	Config func() *config.Config
	// CacheSize bounds the compiled-expression cache (≤ 0: DefaultCacheSize).
	CacheSize int
	Logger    *slog.Logger
}

// Factory compiles SQL92 subscriptions into store filters for the pull
// processor (pull.FilterFactory) and answers CHECK_CLIENT_CONFIG. Compiled
// expressions are shared through a bounded cache keyed by expression text.
type Factory struct {
	cfg   func() *config.Config
	cache *Cache
	log   *slog.Logger
}

// New returns a Factory.
func New(o Options) (*Factory, error) {
	if o.Config == nil {
		return nil, errors.New("filter: Options.Config is required")
	}
	defaults.Logger(&o.Logger)
	return &Factory{cfg: o.Config, cache: NewCache(o.CacheSize), log: o.Logger}, nil
}

// Cache is the factory's compiled-expression cache.
func (f *Factory) Cache() *Cache { return f.cache }

// Compile checks a non-TAG subscription expression as Java does before
// using it: the type must be SQL92, the broker must have
// enablePropertyFilter on, and the expression must parse.
func (f *Factory) Compile(expressionType, expression string) (*Expression, error) {
	if expressionType != client.ExpressionSQL92 {
		return nil, fmt.Errorf("%w %q", ErrUnsupportedType, expressionType)
	}
	if !f.cfg().EnablePropertyFilter {
		// Java answers SYSTEM_ERROR with this remark (pull and
		// CHECK_CLIENT_CONFIG); the code travels with the error.
		return nil, remoting.Errorf(code.SystemError, "%w", ErrPropertyFilterDisabled)
	}
	return f.cache.Compile(expression)
}

// NewFilter implements pull.FilterFactory: the store filter of group's
// SQL92 subscription sub. Tag codes are not consulted (every consume-queue
// entry is read) and the expression decides on the stored properties
// (Java's ExpressionMessageFilter without the optional bloom filter). The
// error of a disabled property filter is a *remoting.CodeError with Java's
// code (SYSTEM_ERROR); others are parse errors (SUBSCRIPTION_PARSE_FAILED).
func (f *Factory) NewFilter(group string, sub client.SubscriptionData) (store.MessageFilter, error) {
	if sub.ClassFilterMode {
		return matchAll{}, nil // Java: class filter mode matches everything here
	}
	x, err := f.Compile(sub.ExpressionType, sub.SubString)
	if err != nil {
		f.log.Debug("consumer filter does not compile", "group", group, "topic", sub.Topic,
			"type", sub.ExpressionType, "expression", sub.SubString, "err", err)
		return nil, err
	}
	return &SQLFilter{x: x, log: f.log}, nil
}

type matchAll struct{}

func (matchAll) MatchTagsCode(int64) bool    { return true }
func (matchAll) MatchProperties([]byte) bool { return true }
func (matchAll) TagsOnly()                   {}

// SQLFilter is a store.MessageFilter for an SQL92 expression.
type SQLFilter struct {
	x   *Expression
	log *slog.Logger
}

// Expression is the compiled selector.
func (s *SQLFilter) Expression() *Expression { return s.x }

// MatchTagsCode lets every consume-queue entry through.
func (s *SQLFilter) MatchTagsCode(int64) bool { return true }

// MatchProperties evaluates the expression; only TRUE matches. Evaluation
// errors (e.g. a non-numeric property compared with a number) do not
// match, as in Java, and are logged at debug level.
func (s *SQLFilter) MatchProperties(props []byte) bool {
	t, err := s.x.Eval(props)
	if err != nil {
		if s.log.Enabled(context.Background(), slog.LevelDebug) {
			s.log.Debug("message filter error", "expression", s.x.Source(), "err", err)
		}
		return false
	}
	return t == True
}

// checkClientBody is CheckClientRequestBody.
type checkClientBody struct {
	ClientID         string                   `json:"clientId"`
	Group            string                   `json:"group"`
	Namespace        string                   `json:"namespace"`
	SubscriptionData *client.SubscriptionData `json:"subscriptionData"`
}

// HandleCheckClientConfig answers CHECK_CLIENT_CONFIG (46), which Java
// consumers send at start for every non-TAG subscription (Java's
// ClientManageProcessor.checkClientConfig): a TAG subscription or a body
// without one is SUCCESS; SQL92 on a broker without enablePropertyFilter is
// SYSTEM_ERROR with Java's remark; an expression that does not compile (or
// an unknown type) is SUBSCRIPTION_PARSE_FAILED (23) with the parse error as
// remark. A Java consumer fails to start on anything but SUCCESS.
func (f *Factory) HandleCheckClientConfig(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(bytes.TrimSpace(req.Body)) == 0 {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	var body checkClientBody
	if err := protocol.Unmarshal(req.Body, &body); err != nil {
		return nil, remoting.Errorf(code.SystemError, "decode CheckClientRequestBody: %v", err)
	}
	sub := body.SubscriptionData
	if sub == nil || sub.IsTagType() {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	if _, err := f.Compile(sub.ExpressionType, sub.SubString); err != nil {
		if errors.Is(err, ErrPropertyFilterDisabled) {
			return nil, err // SYSTEM_ERROR
		}
		f.log.Warn("client filter message, but failed to compile expression", "clientId", body.ClientID,
			"group", body.Group, "topic", sub.Topic, "type", sub.ExpressionType, "expression", sub.SubString, "err", err)
		return nil, remoting.Errorf(code.SubscriptionParseFailed, "%s", err.Error())
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}
