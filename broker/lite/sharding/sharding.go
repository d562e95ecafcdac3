// Package sharding tells a broker which broker is the home of a lite topic
// (docs/lite-topics.md §4.6): the broker of the parent topic's write queue that
// the lite name hashes to (naming.HomeBucket), in the queue order a
// producer derives from the route. The routes come from the nameservers
// and are cached per parent, as Java's TopicRouteInfoManager does for its
// LiteSharding: a miss is fetched at once (bounded by a timeout), a cached
// route older than the refresh interval is still used while a background
// fetch renews it, and a failed fetch is remembered for a short while so
// an unknown topic does not cost a nameserver round trip per request.
package sharding

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Defaults of Options.
const (
	// DefaultRefresh is Java's loadBalancePollNameServerInterval (30 s).
	DefaultRefresh = 30 * time.Second
	// DefaultTimeout bounds one route fetch.
	DefaultTimeout = 3 * time.Second
	// DefaultNegativeTTL is how long a failed fetch is remembered.
	DefaultNegativeTTL = 5 * time.Second
)

// Fetch reads a topic's route from the nameservers.
type Fetch func(ctx context.Context, topic string) (*protocol.TopicRouteData, error)

// Options configure a Cache; Fetch is required.
type Options struct {
	Fetch       Fetch
	Refresh     time.Duration
	Timeout     time.Duration
	NegativeTTL time.Duration
	Now         func() time.Time
	Logger      *slog.Logger
}

type entry struct {
	brokers   []string // write queue → broker name; nil: unknown
	fetchedAt time.Time
	ok        bool
	loading   chan struct{} // closed when the fetch under way ends; nil: none
}

// Cache is safe for concurrent use.
type Cache struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	m  map[string]*entry
}

// New returns an empty cache.
func New(o Options) *Cache {
	defaults.Positive(&o.Refresh, DefaultRefresh)
	defaults.Positive(&o.Timeout, DefaultTimeout)
	defaults.Positive(&o.NegativeTTL, DefaultNegativeTTL)
	defaults.Clock(&o.Now)
	defaults.Logger(&o.Logger)
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{opts: o, log: o.Logger, ctx: ctx, cancel: cancel, m: map[string]*entry{}}
}

// WriteQueueBrokers returns, in route order, the broker name of each write
// queue of topic; ok is false when the route is unknown (no route, fetch
// failed): the caller then treats itself as the home (§4.6 step 1).
func (c *Cache) WriteQueueBrokers(topic string) (brokers []string, ok bool) {
	now := c.opts.Now()
	c.mu.Lock()
	e := c.m[topic]
	switch {
	case e == nil:
		e = &entry{}
		c.m[topic] = e
		wait := c.startLocked(topic, e)
		c.mu.Unlock()
		<-wait
		c.mu.Lock()
	case e.loading != nil && e.fetchedAt.IsZero():
		// The first fetch is under way: wait for it like its starter.
		wait := e.loading
		c.mu.Unlock()
		<-wait
		c.mu.Lock()
	case e.loading == nil && now.Sub(e.fetchedAt) >= c.ttl(e):
		c.startLocked(topic, e) // serve the old value meanwhile
	}
	brokers, ok = e.brokers, e.ok
	c.mu.Unlock()
	return brokers, ok
}

func (c *Cache) ttl(e *entry) time.Duration {
	if e.ok {
		return c.opts.Refresh
	}
	return c.opts.NegativeTTL
}

// startLocked runs one fetch of topic in the background and returns the
// channel closed when it has been stored.
func (c *Cache) startLocked(topic string, e *entry) <-chan struct{} {
	done := make(chan struct{})
	e.loading = done
	if c.ctx.Err() != nil {
		// Closed: no more fetches; the route stays as it is.
		e.loading = nil
		if e.fetchedAt.IsZero() {
			e.fetchedAt = c.opts.Now()
		}
		close(done)
		return done
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		brokers, ok := c.fetch(topic)
		c.mu.Lock()
		// A failed refresh keeps a route already known.
		if ok || !e.ok {
			e.brokers, e.ok = brokers, ok
		}
		e.fetchedAt = c.opts.Now()
		e.loading = nil
		c.mu.Unlock()
		close(done)
	}()
	return done
}

func (c *Cache) fetch(topic string) ([]string, bool) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
	defer cancel()
	rd, err := c.opts.Fetch(ctx, topic)
	if err != nil || rd == nil {
		c.log.Debug("lite sharding: no route of the parent topic; lite topics are homed here meanwhile", "topic", topic, "err", err)
		return nil, false
	}
	brokers := WriteQueueBrokers(rd)
	return brokers, len(brokers) > 0
}

// Home returns the broker name that is the home of the lite topic lite of
// parent, and false when the route is unknown or has no write queue.
func (c *Cache) Home(parent, lite string) (string, bool) {
	brokers, ok := c.WriteQueueBrokers(parent)
	if !ok || len(brokers) == 0 {
		return "", false
	}
	return brokers[naming.HomeBucket(lite, len(brokers))], true
}

// Close stops background fetches and waits for those under way; lookups
// keep answering from what is cached.
func (c *Cache) Close() {
	c.cancel()
	c.wg.Wait()
}

// WriteQueueBrokers lists a route's write queues as a producer orders them
// (Java's topicRouteData2TopicPublishInfo): from orderTopicConf
// ("broker:n;...") when set, else for every writable QueueData whose
// broker has a master, brokers in name order, writeQueueNums entries each.
// Each element is the queue's broker name.
func WriteQueueBrokers(rd *protocol.TopicRouteData) []string {
	var out []string
	if conf := strings.TrimSpace(rd.OrderTopicConf); conf != "" {
		for _, item := range strings.Split(conf, ";") {
			name, num, ok := strings.Cut(item, ":")
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if !ok || err != nil || n <= 0 {
				continue
			}
			for range n {
				out = append(out, strings.TrimSpace(name))
			}
		}
		return out
	}
	qds := slices.Clone(rd.QueueDatas)
	slices.SortFunc(qds, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	for _, qd := range qds {
		if qd.Perm&protocol.PermWrite == 0 || !rd.HasMaster(qd.BrokerName) {
			continue
		}
		for range qd.WriteQueueNums {
			out = append(out, qd.BrokerName)
		}
	}
	return out
}
