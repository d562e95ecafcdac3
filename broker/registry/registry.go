// Package registry keeps the broker registered with every nameserver
// (Java's BrokerOuterAPI.registerBrokerAll and the BrokerController tasks):
// once at start, then periodically, immediately (debounced) after topic
// changes, and an unregistration at shutdown. Each round goes to all
// nameservers in parallel.
package registry

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Java clamps registerNameServerPeriod to [10 s, 60 s] and starts the
// periodic task 10 s after boot.
const (
	MinPeriod           = 10 * time.Second
	MaxPeriod           = 60 * time.Second
	DefaultInitialDelay = 10 * time.Second
	DefaultDebounce     = 100 * time.Millisecond
	DefaultRetryMin     = time.Second
	// UnregisterTimeout is Java's fixed 3 s for UNREGISTER_BROKER.
	UnregisterTimeout = 3 * time.Second
)

// ClampPeriod applies Java's bounds to registerNameServerPeriod.
func ClampPeriod(d time.Duration) time.Duration { return min(max(d, MinPeriod), MaxPeriod) }

// Invoker sends one request; *remoting.Client implements it.
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
}

// Identity is what the REGISTER_BROKER header says about the broker.
type Identity struct {
	ClusterName        string
	BrokerName         string
	BrokerAddr         string // brokerIP1:listenPort
	HAServerAddr       string // brokerIP2:haListenPort
	BrokerID           int64
	EnableActingMaster bool
	// HeartbeatTimeout, when positive, is sent as heartbeatTimeoutMillis
	// (Java sends it only with enableSlaveActingMaster).
	HeartbeatTimeout time.Duration
}

// Source supplies the live registration content; it is read every round so
// configuration changes (namesrvAddr, brokerPermission) apply to the next one.
type Source interface {
	Identity() Identity
	NamesrvAddrs() []string
	// Body is the registration body; its wrapper's dataVersion is the topic
	// table's version.
	Body() protocol.RegisterBrokerBody
	// ForceRegister false makes periodic rounds ask each nameserver
	// (QUERY_DATA_VERSION) and register only when one has stale data.
	ForceRegister() bool
	// Timeout bounds one round (registerBrokerTimeoutMills).
	Timeout() time.Duration
}

// Result is one nameserver's answer to REGISTER_BROKER.
type Result struct {
	NamesrvAddr  string
	MasterAddr   string            // for slaves: the master's address
	HAServerAddr string            // for slaves: the master's HA address
	KVTable      map[string]string // ORDER_TOPIC_CONFIG namespace, may be nil
	Err          error
}

// Options tunes timing; zero values take Java's.
type Options struct {
	InitialDelay time.Duration        // first periodic round after Start
	Period       func() time.Duration // period of the rounds; default 30 s clamped
	Debounce     time.Duration        // coalescing window for Trigger
	// RetryMin is the first wait before a full registration is sent again
	// to the nameservers that failed one; it doubles while they keep
	// failing, up to the period. Apache waits for the next period (30 s):
	// after a failover, a nameserver that missed the new master's
	// registration would route clients to the old one for that long.
	RetryMin  time.Duration
	OnResults func([]Result) // called after each round with the successes and failures
	// Encoding, read every round, says how bodies are sent (nil: one
	// plain JSON body).
	Encoding func() Encoding
	Logger   *slog.Logger
}

// Encoding is Apache's compressedRegister, enableSplitRegistration and
// splitRegistrationSize: a broker with very many topics sends deflated
// bodies (docs/protocol.md §4.4), and splits its topics into registrations
// of SplitSize topics each (the last one carries the static-topic
// mappings), so that no body exceeds a frame (upstream #5296).
type Encoding struct {
	Compressed bool
	Split      bool
	SplitSize  int
}

// Registrar runs the registration schedule.
type Registrar struct {
	inv  Invoker
	src  Source
	opts Options
	log  *slog.Logger

	roundMu sync.Mutex // one round at a time, like Java's synchronized registerBrokerAll

	mu      sync.Mutex
	started bool
	closed  bool
	// What the next triggered round sends: everything, or only these
	// topics (TriggerTopics).
	pendingFull   bool
	pendingTopics map[string]struct{}
	// failed holds the nameservers whose last registration failed; they
	// get a full registration again after a backoff (Options.RetryMin).
	failed map[string]struct{}
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a stopped Registrar.
func New(inv Invoker, src Source, opts Options) *Registrar {
	defaults.Positive(&opts.InitialDelay, DefaultInitialDelay)
	defaults.Positive(&opts.Debounce, DefaultDebounce)
	defaults.Positive(&opts.RetryMin, DefaultRetryMin)
	if opts.Period == nil {
		opts.Period = func() time.Duration { return ClampPeriod(30 * time.Second) }
	}
	defaults.Logger(&opts.Logger)
	log := opts.Logger
	ctx, cancel := context.WithCancel(context.Background())
	return &Registrar{
		inv: inv, src: src, opts: opts, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
	}
}

// Start registers once with every nameserver (waiting for the answers, as
// Java does before printing "boot success") and starts the schedule.
func (r *Registrar) Start() []Result {
	r.mu.Lock()
	if r.started || r.closed {
		r.mu.Unlock()
		return nil
	}
	r.started = true
	r.mu.Unlock()
	res := r.RegisterAll(r.ctx, true)
	go r.loop()
	return res
}

// Trigger asks for a full registration soon; calls within the debounce
// window coalesce into one round.
func (r *Registrar) Trigger() {
	r.mu.Lock()
	r.pendingFull = true
	r.mu.Unlock()
	loop.Wake(r.kick)
}

// TriggerTopics asks for an incremental registration of these topics soon
// (Apache's registerIncrementBrokerData): calls within the debounce window
// coalesce, and a pending full round covers them.
func (r *Registrar) TriggerTopics(names []string) {
	if len(names) == 0 {
		return
	}
	r.mu.Lock()
	if r.pendingTopics == nil {
		r.pendingTopics = make(map[string]struct{}, len(names))
	}
	for _, n := range names {
		r.pendingTopics[n] = struct{}{}
	}
	r.mu.Unlock()
	loop.Wake(r.kick)
}

// takePending returns and clears what the triggers asked for.
func (r *Registrar) takePending() (full bool, topics []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	full, r.pendingFull = r.pendingFull, false
	for n := range r.pendingTopics {
		topics = append(topics, n)
	}
	r.pendingTopics = nil
	return full, topics
}

func (r *Registrar) loop() {
	defer close(r.done)
	timer := time.NewTimer(r.opts.InitialDelay)
	defer timer.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	armed, backoff := false, r.opts.RetryMin
	// rearm schedules a retry of the failed nameservers unless one is
	// pending; without failures the backoff starts over.
	rearm := func() {
		if !r.hasFailed() {
			backoff = r.opts.RetryMin
			return
		}
		if !armed {
			retry.Reset(backoff)
			armed = true
			backoff = min(backoff*2, r.opts.Period())
		}
	}
	rearm() // Start's round may have failed somewhere
	for {
		select {
		case <-r.stop:
			return
		case <-timer.C:
			r.RegisterAll(r.ctx, r.src.ForceRegister())
			timer.Reset(r.opts.Period())
		case <-retry.C:
			armed = false
			r.retryFailed(r.ctx)
		case <-r.kick:
			select {
			case <-time.After(r.opts.Debounce):
			case <-r.stop:
				return
			}
			select { // absorb triggers that arrived while waiting
			case <-r.kick:
			default:
			}
			if full, topics := r.takePending(); full {
				r.RegisterAll(r.ctx, true)
			} else if len(topics) > 0 {
				r.RegisterTopics(r.ctx, topics)
			}
		}
		rearm()
	}
}

// hasFailed reports whether some nameserver's last registration failed.
func (r *Registrar) hasFailed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failed) > 0
}

// noteResults records which nameservers failed a registration and which
// took one.
func (r *Registrar) noteResults(results []Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range results {
		if res.Err == nil {
			delete(r.failed, res.NamesrvAddr)
			continue
		}
		if r.failed == nil {
			r.failed = map[string]struct{}{}
		}
		r.failed[res.NamesrvAddr] = struct{}{}
	}
}

// retryFailed sends a full registration to the nameservers whose last one
// failed and that are still configured.
func (r *Registrar) retryFailed(ctx context.Context) []Result {
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
	configured := r.src.NamesrvAddrs()
	r.mu.Lock()
	closed := r.closed
	var addrs []string
	for _, a := range configured {
		if _, ok := r.failed[a]; ok {
			addrs = append(addrs, a)
		}
	}
	clear(r.failed) // a nameserver no longer configured is not retried
	r.mu.Unlock()
	if closed || len(addrs) == 0 {
		return nil
	}
	var enc Encoding
	if r.opts.Encoding != nil {
		enc = r.opts.Encoding()
	}
	r.log.Info("registering again with the nameservers that failed", "nameservers", addrs)
	return r.send(ctx, addrs, r.src.Identity(), r.src.Body(), enc, r.src.Timeout())
}

// RegisterAll runs one round. With force false it first asks every
// nameserver whether its copy of the topic data is stale and skips the
// round when none is.
func (r *Registrar) RegisterAll(ctx context.Context, force bool) []Result {
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil
	}
	addrs := r.src.NamesrvAddrs()
	if len(addrs) == 0 {
		return nil
	}
	id := r.src.Identity()
	body := r.src.Body()
	timeout := r.src.Timeout()
	var enc Encoding
	if r.opts.Encoding != nil {
		enc = r.opts.Encoding()
	}
	// Apache registers every round when splitting.
	if !force && !enc.Split && !r.needRegister(ctx, addrs, id, body.TopicConfigSerializeWrapper.DataVersion, timeout) {
		r.log.Debug("nameservers are up to date; registration skipped")
		return nil
	}
	return r.send(ctx, addrs, id, body, enc, timeout)
}

// RegisterTopics registers only the named topics (with the table's data
// version and their static-topic mappings), as Apache's
// registerIncrementBrokerData after an admin creates or updates topics: a
// broker with 100k topics does not send them all for one change. Names no
// longer in the table are left out; with none left nothing is sent.
func (r *Registrar) RegisterTopics(ctx context.Context, names []string) []Result {
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	addrs := r.src.NamesrvAddrs()
	if closed || len(addrs) == 0 {
		return nil
	}
	// Identity before Body, as in RegisterAll: a broker elected master
	// in between sends brokerId 0 only with its new state version.
	id := r.src.Identity()
	body := r.src.Body()
	w := &body.TopicConfigSerializeWrapper
	topics := make(map[string]protocol.TopicConfig, len(names))
	mappings := map[string]protocol.TopicQueueMappingInfo{}
	for _, n := range names {
		if tc, ok := w.TopicConfigTable[n]; ok {
			topics[n] = tc
			if m, ok := w.TopicQueueMappingInfoMap[n]; ok {
				mappings[n] = m
			}
		}
	}
	if len(topics) == 0 {
		return nil
	}
	w.TopicConfigTable, w.TopicQueueMappingInfoMap = topics, mappings
	var enc Encoding
	if r.opts.Encoding != nil {
		enc = r.opts.Encoding()
	}
	return r.send(ctx, addrs, id, body, enc, r.src.Timeout())
}

// send registers body (split and encoded as enc says) with every
// nameserver and reports the answers.
func (r *Registrar) send(ctx context.Context, addrs []string, id Identity, body protocol.RegisterBrokerBody, enc Encoding, timeout time.Duration) []Result {
	ext := map[string]string{
		"brokerName":         id.BrokerName,
		"brokerAddr":         id.BrokerAddr,
		"clusterName":        id.ClusterName,
		"haServerAddr":       id.HAServerAddr,
		"brokerId":           strconv.FormatInt(id.BrokerID, 10),
		"enableActingMaster": strconv.FormatBool(id.EnableActingMaster),
		"compressed":         strconv.FormatBool(enc.Compressed),
	}
	if id.HeartbeatTimeout > 0 {
		ext["heartbeatTimeoutMillis"] = strconv.FormatInt(id.HeartbeatTimeout.Milliseconds(), 10)
	}
	var results []Result
	for _, part := range splitBody(body, enc) {
		payload, err := encodeBody(part, enc.Compressed)
		if err != nil {
			r.log.Error("encode registration body", "err", err)
			return nil
		}
		partExt := maps.Clone(ext)
		partExt["bodyCrc32"] = strconv.FormatInt(int64(BodyCRC32(payload)), 10)
		results = mergeResults(results, r.registerAllOnce(ctx, addrs, partExt, payload, timeout))
	}
	r.noteResults(results)
	ok := 0
	for _, res := range results {
		if res.Err != nil {
			r.log.Warn("register broker to name server failed", "namesrv", res.NamesrvAddr, "err", res.Err)
		} else {
			ok++
		}
	}
	r.log.Debug("registered broker", "nameservers", len(addrs), "ok", ok,
		"topics", len(body.TopicConfigSerializeWrapper.TopicConfigTable), "dataVersion", body.TopicConfigSerializeWrapper.DataVersion)
	if r.opts.OnResults != nil {
		r.opts.OnResults(results)
	}
	return results
}

// registerAllOnce sends one REGISTER_BROKER to every nameserver at once.
func (r *Registrar) registerAllOnce(ctx context.Context, addrs []string, ext map[string]string, payload []byte, timeout time.Duration) []Result {
	results := make([]Result, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			results[i] = r.registerOne(ctx, addr, ext, payload, timeout)
		})
	}
	wg.Wait()
	return results
}

// splitBody is the registration's bodies: one, or with Split and more than
// SplitSize topics, Apache's chunks (registerBrokerAll): SplitSize topics
// each, in name order, all with the table's data version; the last one
// holds the rest of the topics (maybe none), the static topics and their
// mappings.
func splitBody(b protocol.RegisterBrokerBody, enc Encoding) []protocol.RegisterBrokerBody {
	w := b.TopicConfigSerializeWrapper
	if !enc.Split || enc.SplitSize <= 0 || len(w.TopicConfigTable) < enc.SplitSize {
		return []protocol.RegisterBrokerBody{b}
	}
	// A static topic goes with its mapping in the last body: a nameserver
	// drops the mapping of a topic registered without one.
	var names, static []string
	for _, n := range slices.Sorted(maps.Keys(w.TopicConfigTable)) {
		if _, ok := w.TopicQueueMappingInfoMap[n]; ok {
			static = append(static, n)
		} else {
			names = append(names, n)
		}
	}
	var out []protocol.RegisterBrokerBody
	for len(names) >= enc.SplitSize {
		part := b
		part.TopicConfigSerializeWrapper = protocol.TopicConfigAndMappingSerializeWrapper{
			DataVersion: w.DataVersion, MappingDataVersion: w.MappingDataVersion,
			TopicConfigTable:           make(map[string]protocol.TopicConfig, enc.SplitSize),
			TopicQueueMappingInfoMap:   map[string]protocol.TopicQueueMappingInfo{},
			TopicQueueMappingDetailMap: map[string]protocol.TopicQueueMappingDetail{},
		}
		for _, n := range names[:enc.SplitSize] {
			part.TopicConfigSerializeWrapper.TopicConfigTable[n] = w.TopicConfigTable[n]
		}
		out = append(out, part)
		names = names[enc.SplitSize:]
	}
	last := b
	last.TopicConfigSerializeWrapper.TopicConfigTable = make(map[string]protocol.TopicConfig, len(names)+len(static))
	for _, n := range append(names, static...) {
		last.TopicConfigSerializeWrapper.TopicConfigTable[n] = w.TopicConfigTable[n]
	}
	return append(out, last)
}

func encodeBody(b protocol.RegisterBrokerBody, compressed bool) ([]byte, error) {
	if compressed {
		return protocol.EncodeRegisterBodyCompressed(b)
	}
	return protocol.Marshal(b)
}

// mergeResults folds one registration's answers into a round's: the first
// failure of a nameserver stays, otherwise its latest answer.
func mergeResults(round, part []Result) []Result {
	if round == nil {
		return part
	}
	for i := range round {
		if round[i].Err == nil {
			round[i] = part[i]
		}
	}
	return round
}

func (r *Registrar) registerOne(ctx context.Context, addr string, ext map[string]string, payload []byte, timeout time.Duration) Result {
	res := Result{NamesrvAddr: addr}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := remoting.NewRequest(code.RegisterBroker, maps.Clone(ext), payload)
	resp, err := r.inv.Invoke(ctx, addr, req)
	if err != nil {
		res.Err = fmt.Errorf("register to %s: %w", addr, err)
		return res
	}
	if resp.Code != code.Success {
		res.Err = fmt.Errorf("register to %s: code %d: %s", addr, resp.Code, resp.Remark)
		return res
	}
	res.MasterAddr = resp.Ext("masterAddr")
	res.HAServerAddr = resp.Ext("haServerAddr")
	if len(resp.Body) > 0 {
		var kv protocol.KVTable
		if err := protocol.Unmarshal(resp.Body, &kv); err != nil {
			r.log.Warn("bad KVTable in REGISTER_BROKER response", "namesrv", addr, "err", err)
		} else {
			res.KVTable = kv.Table
		}
	}
	return res
}

// needRegister asks every nameserver (QUERY_DATA_VERSION) whether it holds
// an older dataVersion. Like Java, an unreachable nameserver does not force
// a round; unlike Java, one that does not support the request does.
func (r *Registrar) needRegister(ctx context.Context, addrs []string, id Identity, dv protocol.DataVersion, timeout time.Duration) bool {
	body := protocol.MustMarshal(dv)
	ext := map[string]string{
		"brokerName":  id.BrokerName,
		"brokerAddr":  id.BrokerAddr,
		"clusterName": id.ClusterName,
		"brokerId":    strconv.FormatInt(id.BrokerID, 10),
	}
	changed := make([]bool, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := r.inv.Invoke(cctx, addr, remoting.NewRequest(code.QueryDataVersion, maps.Clone(ext), body))
			switch {
			case err != nil:
				r.log.Warn("query data version failed", "namesrv", addr, "err", err)
			case resp.Code != code.Success:
				changed[i] = true
			default:
				changed[i] = resp.Ext("changed") == "true"
			}
		})
	}
	wg.Wait()
	for _, c := range changed {
		if c {
			return true
		}
	}
	return false
}

// Shutdown stops the schedule and unregisters from every nameserver. It is
// idempotent; later rounds do nothing.
func (r *Registrar) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	started := r.started
	r.mu.Unlock()
	close(r.stop)
	if started {
		select {
		case <-r.done:
		case <-ctx.Done():
		}
	}
	r.cancel() // abort a round still in flight
	r.roundMu.Lock()
	defer r.roundMu.Unlock()
	if !started {
		return nil
	}
	return r.unregisterAll(ctx)
}

func (r *Registrar) unregisterAll(ctx context.Context) error {
	id := r.src.Identity()
	ext := map[string]string{
		"brokerName":  id.BrokerName,
		"brokerAddr":  id.BrokerAddr,
		"clusterName": id.ClusterName,
		"brokerId":    strconv.FormatInt(id.BrokerID, 10),
	}
	addrs := r.src.NamesrvAddrs()
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), UnregisterTimeout)
			defer cancel()
			resp, err := r.inv.Invoke(cctx, addr, remoting.NewRequest(code.UnregisterBroker, maps.Clone(ext), nil))
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("unregister from %s: %w", addr, err)
			case resp.Code != code.Success:
				errs[i] = fmt.Errorf("unregister from %s: code %d: %s", addr, resp.Code, resp.Remark)
			default:
				r.log.Info("unregistered broker", "namesrv", addr)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// BodyCRC32 is Java's UtilAll.crc32: CRC-32 (IEEE) masked to 31 bits.
func BodyCRC32(b []byte) int32 { return int32(crc32.ChecksumIEEE(b) & 0x7FFFFFFF) }
