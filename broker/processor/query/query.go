// Package query answers QUERY_MESSAGE (12: messages by key or UNIQ_KEY) and
// VIEW_MESSAGE_BY_ID (33: one message by commit-log offset), following
// Apache RocketMQ's QueryMessageProcessor. Bodies are stored records
// (docs/protocol.md §5.6), concatenated for a query.
package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// UniqueKeyQueryFlag is the extField that marks a query by UNIQ_KEY
// (MixAll.UNIQUE_MSG_QUERY_FLAG).
const UniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"

// Response extFields of QUERY_MESSAGE (QueryMessageResponseHeader; Java
// spells the second one with a lower-case "o").
const (
	extIndexLastUpdateTimestamp = "indexLastUpdateTimestamp"
	extIndexLastUpdatePhyOffset = "indexLastUpdatePhyoffset"
)

// Store is the part of the message store queries use; store.MessageStore
// implements it.
type Store interface {
	QueryMessage(topic, key string, uniq bool, maxNum int, begin, end int64) (*store.QueryResult, error)
	ReadRecord(phyOffset int64) ([]byte, error)
}

// Deps are the processor's collaborators; all but Logger are required.
type Deps struct {
	// Config returns the live broker configuration (config.Holder.Get).
	Config func() *config.Config
	Store  Store
	Logger *slog.Logger
}

// Processor holds the query handlers.
type Processor struct {
	d   Deps
	log *slog.Logger
}

// New returns a Processor.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil {
		return nil, errors.New("query: Deps.Config and Deps.Store are required")
	}
	defaults.Logger(&d.Logger)
	log := d.Logger
	return &Processor{d: d, log: log}, nil
}

// Handlers maps each request code to its handler. Handlers do not use the
// channel, so tests may pass nil.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.QueryMessage:    p.queryMessage,
		code.ViewMessageByID: p.viewMessageByID,
	}
}

// Register installs the handlers on the admin executor: queries come from
// tools and read index and log, so they must not hold up sends or pulls
// (Java gives them their own pool).
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

// queryMessage answers QUERY_MESSAGE: 0 with the records, or
// QUERY_NOT_FOUND; the index's last update is reported either way.
func (p *Processor) queryMessage(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	key := f.Str("key")
	maxNum := f.Int32("maxNum")
	begin := f.Int64("beginTimestamp")
	end := f.Int64("endTimestamp")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	cfg := p.d.Config()
	uniq := req.Ext(UniqueKeyQueryFlag) == "true"
	if uniq {
		// A UNIQ_KEY may be shared by re-sent copies; the broker decides how
		// many to return.
		maxNum = int32(cfg.DefaultQueryMaxNum)
	}
	if cfg.MaxMsgsNumBatch > 0 && int(maxNum) > cfg.MaxMsgsNumBatch {
		maxNum = int32(cfg.MaxMsgsNumBatch)
	}
	res, err := p.d.Store.QueryMessage(topic, key, uniq, int(maxNum), begin, end)
	if err != nil {
		p.log.Warn("query message failed", "topic", topic, "key", key, "err", err)
		return nil, remoting.Errorf(code.SystemError, "query message topic[%s] key[%s]: %w", topic, key, err)
	}
	if res == nil {
		res = &store.QueryResult{}
	}
	ext := map[string]string{
		extIndexLastUpdateTimestamp: strconv.FormatInt(res.IndexLastUpdateTimestamp, 10),
		extIndexLastUpdatePhyOffset: strconv.FormatInt(res.IndexLastUpdatePhyOffset, 10),
	}
	size := 0
	for _, r := range res.Records {
		size += len(r)
	}
	if size == 0 {
		resp := remoting.NewResponse(req, code.QueryNotFound, "can not find message, maybe time range not correct")
		resp.ExtFields = ext
		return resp, nil
	}
	body := make([]byte, 0, size)
	for _, r := range res.Records {
		body = append(body, r...)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.ExtFields = ext
	resp.Body = body
	return resp, nil
}

// viewMessageByID answers VIEW_MESSAGE_BY_ID with the record at a
// commit-log offset (decoded by the client from an offset message id).
func (p *Processor) viewMessageByID(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	offset := f.Int64("offset")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	rec, err := p.d.Store.ReadRecord(offset)
	if err != nil || len(rec) == 0 {
		if err != nil {
			p.log.Debug("view message by id failed", "offset", offset, "err", err)
		}
		return nil, &remoting.CodeError{Code: code.SystemError, Remark: fmt.Sprintf("can not find message by the offset, %d", offset)}
	}
	resp := remoting.NewResponse(req, code.Success, "")
	// The store may hand out mapped memory; the response outlives this call.
	resp.Body = append([]byte(nil), rec...)
	return resp, nil
}
