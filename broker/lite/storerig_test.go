package lite_test

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// storeRig is a store with lite support and the lite service over it, no
// network: for sweeps of many lite topics. Expiration is counted in
// milliseconds (lite.topic.expiration "1" is 1 ms).
type storeRig struct {
	dir string // the store's
	cfg *config.Config
	st  *store.Store
	svc *lite.Service
}

// storeRigOptions: parents maps a LITE parent to its lite.topic.expiration,
// groups a lite group to its attributes (without the '+').
type storeRigOptions struct {
	maxLmqs, maxSubs int
	parents          map[string]string
	groups           map[string]map[string]string
	tune             func(*store.Config)
}

func newStoreRig(tb testing.TB, o storeRigOptions) *storeRig {
	tb.Helper()
	dir := tb.TempDir()
	c := config.Default(config.Host{Hostname: "rig", IP: "127.0.0.1", Home: dir})
	c.EnableLmq, c.EnableMultiDispatch, c.MinLiteTTL = true, true, 0
	if o.maxLmqs > 0 {
		c.MaxLmqConsumeQueueNum = o.maxLmqs
	}
	if o.maxSubs > 0 {
		c.MaxLiteSubscriptionCount = int64(o.maxSubs)
	}
	cfgFn := func() *config.Config { return c }
	sc := store.DefaultConfig(dir)
	sc.MaxLmqConsumeQueueNum = c.MaxLmqConsumeQueueNum
	if o.tune != nil {
		o.tune(&sc)
	}
	st, err := store.Open(sc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	topics, err := topic.New(topic.Options{Config: cfgFn})
	if err != nil {
		tb.Fatal(err)
	}
	for name, ttl := range o.parents {
		tc := protocol.NewTopicConfig(name)
		tc.Attributes = map[string]string{"+message.type": "LITE", "+lite.topic.expiration": ttl}
		if _, err := topics.Update(tc); err != nil {
			tb.Fatal(err)
		}
	}
	groups, err := subscription.New(subscription.Options{Config: cfgFn})
	if err != nil {
		tb.Fatal(err)
	}
	for g, attrs := range o.groups {
		gc := subscription.NewGroupConfig(g)
		gc.Attributes = map[string]string{}
		for k, v := range attrs {
			gc.Attributes["+"+k] = v
		}
		if err := groups.Update(gc); err != nil {
			tb.Fatal(err)
		}
	}
	svc, err := lite.New(lite.Deps{Config: cfgFn, Store: st, Topics: topics, Groups: groups, ExpirationUnit: time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(svc.Close) // runs before the store's Close (cleanups are LIFO)
	return &storeRig{dir: dir, cfg: c, st: st, svc: svc}
}

// waitDispatched waits until every appended message is dispatched.
func (r *storeRig) waitDispatched() {
	for r.st.ConsumeQueue().DispatchedOffset() < r.st.CommitLog().MaxOffset() {
		time.Sleep(time.Millisecond)
	}
}
