package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// Transactional messages over gRPC, as Apache's proxy serves them (Apache
// proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/transaction/
// EndTransactionActivity.java, proxy/.../processor/TransactionProcessor.java
// and proxy/.../service/transaction/): a 5.x producer has no producer group,
// so the topic name is the group (PGROUP of the half message, the group of
// END_TRANSACTION and of the check-back); the server remembers, per
// transaction id, where the half message is (its half-queue offset and
// CommitLog offset) from the send's answer and from each check-back, and
// EndTransaction turns the id back into the broker's END_TRANSACTION.

// EndTxInput is one END_TRANSACTION for the broker (remoting header
// EndTransactionRequestHeader).
type EndTxInput struct {
	ProducerGroup        string
	TranStateTableOffset int64
	CommitLogOffset      int64
	// CommitOrRollback is the sysFlag transaction type: 0 unknown, 8 commit,
	// 12 rollback.
	CommitOrRollback     int32
	FromTransactionCheck bool
	MessageID            string
	TransactionID        string
}

// Sysflag transaction types (RocketMQ MessageSysFlag).
const (
	txNotType      = 0
	txPreparedType = 0x4
	txCommitType   = 0x8
	txRollbackType = 0xc
)

// Producing is what the producer rpcs need of the broker besides Send.
type Producing interface {
	// EndTransaction runs END_TRANSACTION; the answer is a remoting
	// response code and remark.
	EndTransaction(ctx context.Context, in EndTxInput) (SendResult, error)
	// MaxDelay is how far ahead a delivery timestamp may be
	// (timerMaxDelaySec).
	MaxDelay() time.Duration
}

// txData is where a transaction's half message is.
type txData struct {
	tranStateTableOffset, commitLogOffset int64
	at                                    time.Time
}

// txKey is a transaction: its producer group (the topic) and id.
type txKey struct{ group, id string }

// txDataTTL bounds how long an unended transaction's data is kept: the
// broker's check-back brings it again (Apache's proxy expires its
// TransactionDataManager entries the same way).
const txDataTTL = time.Hour

// maxTxData bounds the table; past it, entries older than a minute go,
// then any (a forgotten transaction is remembered again by its next
// check-back).
const maxTxData = 100_000

// Producers are the gRPC producers online (their Telemetry streams, by
// topic) and the open transactions they started; the broker's transaction
// check calls back through it (Pick, Session.RecoverOrphaned).
type Producers struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]map[*Session]struct{} // topic → sessions
	// clients are the Telemetry streams of every client by client id
	// (the latest one), for the lite unsubscribe notification (lite.go).
	clients map[string]*Session
	tx      map[txKey]txData
	next    uint64 // Pick's round robin
}

// NewProducers returns an empty registry.
func NewProducers() *Producers {
	return &Producers{now: time.Now, sessions: map[string]map[*Session]struct{}{}, clients: map[string]*Session{}, tx: map[txKey]txData{}}
}

// Session is one client's Telemetry stream.
type Session struct {
	p        *Producers
	clientID string
	remote   string

	sendMu sync.Mutex
	stream v2pb.MessagingService_TelemetryServer
	// pushes bounds the check-backs being written: a client that stops
	// reading blocks its stream, not the broker's transaction check.
	pushes chan struct{}

	topics []string // guarded by p.mu

	// replies are the admin requests waiting for the client's answer
	// (verify.go).
	replies replies
}

func (p *Producers) newSession(stream v2pb.MessagingService_TelemetryServer, clientID, remote string) *Session {
	s := &Session{p: p, stream: stream, clientID: clientID, remote: remote, pushes: make(chan struct{}, maxPushes)}
	if clientID != "" {
		p.mu.Lock()
		p.clients[clientID] = s
		p.mu.Unlock()
	}
	return s
}

// send writes one command; the stream is shared by the Telemetry loop and
// the check-back.
func (s *Session) send(cmd *v2pb.TelemetryCommand) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.stream.Send(cmd)
}

// RemoteAddr is the client's address.
func (s *Session) RemoteAddr() string { return s.remote }

// publish registers s as a producer of topics (replacing what it
// published before), as the proxy registers a producer per topic.
func (p *Producers) publish(s *Session, topics []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(s)
	s.topics = topics
	for _, t := range topics {
		m := p.sessions[t]
		if m == nil {
			m = map[*Session]struct{}{}
			p.sessions[t] = m
		}
		m[s] = struct{}{}
	}
}

// remove forgets a closed session.
func (p *Producers) remove(s *Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(s)
	if p.clients[s.clientID] == s {
		delete(p.clients, s.clientID)
	}
}

func (p *Producers) dropLocked(s *Session) {
	for _, t := range s.topics {
		delete(p.sessions[t], s)
		if len(p.sessions[t]) == 0 {
			delete(p.sessions, t)
		}
	}
	s.topics = nil
}

// Pick returns a live producer session of group (a topic name), nil when
// none is online.
func (p *Producers) Pick(group string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.sessions[group]
	if len(m) == 0 {
		return nil
	}
	p.next++
	i := p.next % uint64(len(m))
	for s := range m {
		if i == 0 {
			return s
		}
		i--
	}
	return nil
}

// remember records where a transaction's half message is.
func (p *Producers) remember(group, id string, tranStateTableOffset, commitLogOffset int64) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tx) >= maxTxData {
		for k, d := range p.tx {
			if now.Sub(d.at) > time.Minute {
				delete(p.tx, k)
			}
		}
		for k := range p.tx {
			if len(p.tx) < maxTxData*9/10 {
				break
			}
			delete(p.tx, k)
		}
	}
	p.tx[txKey{group, id}] = txData{tranStateTableOffset: tranStateTableOffset, commitLogOffset: commitLogOffset, at: now}
}

func (p *Producers) lookup(group, id string) (txData, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.tx[txKey{group, id}]
	if ok && p.now().Sub(d.at) > txDataTTL {
		delete(p.tx, txKey{group, id})
		return txData{}, false
	}
	return d, ok
}

func (p *Producers) forget(group, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tx, txKey{group, id})
}

// OrphanedTransaction is one check-back of the broker's transaction check
// (CHECK_TRANSACTION_STATE): the half message as the producer sent it
// (real topic and queue) and where its current copy is.
type OrphanedTransaction struct {
	Group                string
	TransactionID        string
	TranStateTableOffset int64
	CommitLogOffset      int64
	Message              *message.Message
}

// RecoverOrphaned asks the producer for the transaction's state with a
// RecoverOrphanedTransactionCommand on its Telemetry stream; the producer
// answers with EndTransaction (source SOURCE_SERVER_CHECK).
func (s *Session) RecoverOrphaned(tx OrphanedTransaction) error {
	if tx.Message == nil || tx.TransactionID == "" {
		return errors.New("grpcserver: orphaned transaction without message or id")
	}
	msg, err := protoMessage(tx.Message, v2pb.MessageType_TRANSACTION)
	if err != nil {
		return fmt.Errorf("grpcserver: orphaned transaction %s: %w", tx.TransactionID, err)
	}
	select {
	case s.pushes <- struct{}{}:
	default:
		return fmt.Errorf("grpcserver: recover orphaned transaction %s: %d check-backs to %s not written yet (the client does not read)",
			tx.TransactionID, maxPushes, s.remote)
	}
	s.p.remember(tx.Group, tx.TransactionID, tx.TranStateTableOffset, tx.CommitLogOffset)
	cmd := &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &v2pb.RecoverOrphanedTransactionCommand{Message: msg, TransactionId: tx.TransactionID},
	}}
	// Written in the background: Send blocks while the client's flow
	// control window is full, and returns once the stream ends.
	go func() {
		defer func() { <-s.pushes }()
		_ = s.send(cmd)
	}()
	return nil
}

// maxPushes is how many check-backs may wait to be written to one stream.
const maxPushes = 64

// EndTransaction commits or rolls back a transaction the producer started
// (or was asked about), through the broker's END_TRANSACTION. Unlike the
// proxy, which sends END_TRANSACTION one-way and always answers OK, the
// broker's answer is passed on: a transaction already ended the other
// way, or ended after its check immunity, is refused.
func (m *messaging) EndTransaction(ctx context.Context, req *v2pb.EndTransactionRequest) (*v2pb.EndTransactionResponse, error) {
	fail := func(c v2pb.Code, format string, args ...any) (*v2pb.EndTransactionResponse, error) {
		return &v2pb.EndTransactionResponse{Status: &v2pb.Status{Code: c, Message: fmt.Sprintf(format, args...)}}, nil
	}
	topic := req.GetTopic().GetName()
	if err := checkTopicName(topic); err != nil {
		return fail(v2pb.Code_ILLEGAL_TOPIC, "%v", err)
	}
	id := strings.TrimSpace(req.GetTransactionId())
	if id == "" {
		return fail(v2pb.Code_INVALID_TRANSACTION_ID, "transaction id cannot be empty")
	}
	var resolution int32 = txNotType
	switch req.GetResolution() {
	case v2pb.TransactionResolution_COMMIT:
		resolution = txCommitType
	case v2pb.TransactionResolution_ROLLBACK:
		resolution = txRollbackType
	}
	d, found := m.producers.lookup(topic, id)
	if !found {
		return fail(v2pb.Code_INVALID_TRANSACTION_ID, "cannot find transaction data of %s on topic %s (not sent through this broker, or already ended)", id, topic)
	}
	res, err := m.backend.EndTransaction(ctx, EndTxInput{
		ProducerGroup:        topic,
		TranStateTableOffset: d.tranStateTableOffset,
		CommitLogOffset:      d.commitLogOffset,
		CommitOrRollback:     resolution,
		FromTransactionCheck: req.GetSource() == v2pb.TransactionSource_SOURCE_SERVER_CHECK,
		MessageID:            req.GetMessageId(),
		TransactionID:        id,
	})
	if err != nil {
		return fail(v2pb.Code_INTERNAL_SERVER_ERROR, "end transaction: %v", err)
	}
	if res.Code != code.Success {
		return fail(endTxCode(res.Code), "%s", res.Remark)
	}
	if resolution != txNotType {
		m.producers.forget(topic, id)
	}
	return &v2pb.EndTransactionResponse{Status: ok()}, nil
}

func endTxCode(rc int32) v2pb.Code {
	switch rc {
	case code.InvalidParameter:
		return v2pb.Code_BAD_REQUEST
	case code.IllegalOperation, code.TransactionFailed:
		// Ended the other way already, or answered after the check
		// immunity: the broker decides by its check.
		return v2pb.Code_PRECONDITION_FAILED
	case code.SystemError:
		// The half message is not where the transaction data says.
		return v2pb.Code_INVALID_TRANSACTION_ID
	}
	return sendCode(rc)
}

// protoMessage is a stored message as the 5.x clients read it (Apache
// proxy/.../grpc/v2/common/GrpcConverter.java buildMessage): system
// properties from RocketMQ's own, the others as user properties, the body
// with its CRC32 digest in the client's spelling (upper-case hex, Java's
// Long.toHexString).
func protoMessage(m *message.Message, typ v2pb.MessageType) (*v2pb.Message, error) {
	body, enc := m.Body, v2pb.Encoding_IDENTITY
	if m.SysFlag&message.FlagCompressed != 0 {
		var err error
		if body, err = message.Decompress(m.Body, m.SysFlag, 0); err != nil {
			return nil, err
		}
	}
	sp := &v2pb.SystemProperties{
		MessageId:    m.UniqKey(),
		Keys:         m.Keys(),
		BodyEncoding: enc,
		BodyDigest:   &v2pb.Digest{Type: v2pb.DigestType_CRC32, Checksum: strings.ToUpper(strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 16))},
		MessageType:  typ,
		QueueId:      m.QueueID,
	}
	if t := m.Tags(); t != "" {
		sp.Tag = &t
	}
	if m.BornTimestamp > 0 {
		sp.BornTimestamp = timestamppb.New(time.UnixMilli(m.BornTimestamp))
	}
	sp.BornHost = m.Property(message.PropertyBornHost)
	if sp.BornHost == "" && m.BornHost.IsValid() {
		sp.BornHost = m.BornHost.Addr().String()
	}
	if m.StoreTimestamp > 0 {
		sp.StoreTimestamp = timestamppb.New(time.UnixMilli(m.StoreTimestamp))
	}
	if m.StoreHost.IsValid() {
		sp.StoreHost = m.StoreHost.String()
	}
	if g := m.Property(message.PropertyShardingKey); g != "" {
		sp.MessageGroup = &g
	}
	if tc := m.Property(message.PropertyTraceContext); tc != "" {
		sp.TraceContext = &tc
	}
	user := map[string]string{}
	for k, v := range m.Properties {
		if !systemProperty(k) {
			user[k] = v
		}
	}
	return &v2pb.Message{
		Topic:            &v2pb.Resource{Name: m.Topic},
		UserProperties:   user,
		SystemProperties: sp,
		Body:             body,
	}, nil
}

// addrPortOf is a peer's address: a TCP peer's without formatting and
// parsing it (a string and its parse per send), others through their string.
func addrPortOf(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return peerAddrPort(a.String())
}

// peerAddrPort parses a peer address for the born host.
func peerAddrPort(addr string) netip.AddrPort {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// forgetClient unregisters every producer session of a client id.
func (p *Producers) forgetClient(clientID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[*Session]bool{}
	for _, m := range p.sessions {
		for s := range m {
			if s.clientID == clientID && clientID != "" {
				seen[s] = true
			}
		}
	}
	for s := range seen {
		p.dropLocked(s)
	}
	return len(seen)
}
