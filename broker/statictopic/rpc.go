package statictopic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Remote sends a request to the master of another broker, by name
// (broker-to-broker RPC, docs/static-topics.md §7.13). A transport failure is an
// error; a response with an error code is not.
type Remote interface {
	Invoke(ctx context.Context, brokerName string, req *remoting.Command) (*remoting.Command, error)
}

// RouteSource reads a topic's route from the nameservers (the clean
// service computes the real leader of each logic queue from it).
type RouteSource interface {
	Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error)
}

// Invoker sends one request to an address; *remoting.Client implements it
// and keeps one connection per address.
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
}

// forwardable are the codes Java's RpcClient forwards (§7.13).
var forwardable = map[int32]bool{
	code.PullMessage: true, code.GetMinOffset: true, code.GetMaxOffset: true,
	code.SearchOffsetByTimestamp: true, code.GetEarliestMsgStoreTime: true,
	code.QueryConsumerOffset: true, code.UpdateConsumerOffset: true,
	code.GetTopicStatsInfo: true, code.GetTopicConfig: true,
}

// RPCOptions configure a BrokerRPC.
type RPCOptions struct {
	// Invoker carries the requests (connection cache included).
	Invoker Invoker
	// NamesrvAddrs lists the nameservers to ask for cluster info and routes.
	NamesrvAddrs func() []string
	// Timeout bounds one forwarded request (forwardTimeout, 3 s).
	Timeout func() time.Duration
	// RefreshInterval is how long a cluster-info answer is trusted (Java
	// refreshes every 5 s); an unknown broker name forces a refresh.
	RefreshInterval time.Duration
	Now             func() time.Time
	Logger          *slog.Logger
}

// BrokerRPC is Remote and RouteSource over the remoting client: broker
// names resolve to master addresses through a cached
// GET_BROKER_CLUSTER_INFO answer.
type BrokerRPC struct {
	o   RPCOptions
	log *slog.Logger

	refreshMu sync.Mutex // one cluster-info query at a time
	mu        sync.RWMutex
	masters   map[string]string
	fetched   time.Time
}

// NewBrokerRPC returns a BrokerRPC; Invoker and NamesrvAddrs are required.
func NewBrokerRPC(o RPCOptions) (*BrokerRPC, error) {
	if o.Invoker == nil || o.NamesrvAddrs == nil {
		return nil, errors.New("statictopic: RPCOptions.Invoker and NamesrvAddrs are required")
	}
	if o.Timeout == nil {
		o.Timeout = func() time.Duration { return 3 * time.Second }
	}
	defaults.Positive(&o.RefreshInterval, 5*time.Second)
	defaults.Clock(&o.Now)
	defaults.Logger(&o.Logger)
	log := o.Logger
	return &BrokerRPC{o: o, log: log, masters: map[string]string{}}, nil
}

func (r *BrokerRPC) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.o.Timeout()
	if d <= 0 {
		d = 3 * time.Second
	}
	return context.WithTimeout(ctx, d)
}

// Invoke implements Remote.
func (r *BrokerRPC) Invoke(ctx context.Context, brokerName string, req *remoting.Command) (*remoting.Command, error) {
	if !forwardable[req.Code] {
		return nil, remoting.Errorf(code.RequestCodeNotSupported, "request code %d is not forwarded between brokers", req.Code)
	}
	addr, err := r.MasterAddr(ctx, brokerName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.timeout(ctx)
	defer cancel()
	resp, err := r.o.Invoker.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("forward request %d to %s (%s): %w", req.Code, brokerName, addr, err)
	}
	return resp, nil
}

// MasterAddr resolves a broker name to its master's address.
func (r *BrokerRPC) MasterAddr(ctx context.Context, brokerName string) (string, error) {
	r.mu.RLock()
	addr, ok := r.masters[brokerName]
	fresh := r.o.Now().Sub(r.fetched) < r.o.RefreshInterval
	r.mu.RUnlock()
	if ok && fresh {
		return addr, nil
	}
	if err := r.refresh(ctx); err != nil {
		if ok {
			r.log.Debug("cluster info refresh failed, using the cached address", "broker", brokerName, "err", err)
			return addr, nil
		}
		return "", err
	}
	r.mu.RLock()
	addr, ok = r.masters[brokerName]
	r.mu.RUnlock()
	if !ok || addr == "" {
		return "", fmt.Errorf("cannot find addr for broker %s", brokerName)
	}
	return addr, nil
}

// refresh reloads the broker name → master address table from the first
// nameserver that answers.
func (r *BrokerRPC) refresh(ctx context.Context) error {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	r.mu.RLock()
	recent := r.o.Now().Sub(r.fetched) < 100*time.Millisecond
	r.mu.RUnlock()
	if recent {
		return nil // refreshed by a concurrent caller
	}
	var info protocol.ClusterInfo
	if err := r.askNamesrv(ctx, remoting.NewRequest(code.GetBrokerClusterInfo, nil, nil), &info); err != nil {
		return fmt.Errorf("get broker cluster info: %w", err)
	}
	masters := make(map[string]string, len(info.BrokerAddrTable))
	for name, bd := range info.BrokerAddrTable {
		if a := bd.BrokerAddrs[protocol.MasterID]; a != "" {
			masters[name] = a
		}
	}
	r.mu.Lock()
	r.masters, r.fetched = masters, r.o.Now()
	r.mu.Unlock()
	return nil
}

// Route implements RouteSource (GET_ROUTEINFO_BY_TOPIC).
func (r *BrokerRPC) Route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	var rd protocol.TopicRouteData
	req := remoting.NewRequest(code.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	if err := r.askNamesrv(ctx, req, &rd); err != nil {
		return nil, fmt.Errorf("get route of %s: %w", topic, err)
	}
	return &rd, nil
}

// askNamesrv sends req to each nameserver in turn until one answers
// SUCCESS with a decodable body.
func (r *BrokerRPC) askNamesrv(ctx context.Context, req *remoting.Command, v any) error {
	addrs := r.o.NamesrvAddrs()
	if len(addrs) == 0 {
		return errors.New("no nameserver address")
	}
	var errs []error
	for _, addr := range addrs {
		cctx, cancel := r.timeout(ctx)
		c := *req
		c.ExtFields = cloneExt(req.ExtFields)
		resp, err := r.o.Invoker.Invoke(cctx, addr, &c)
		cancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		case resp.Code != code.Success:
			errs = append(errs, fmt.Errorf("%s: code %d: %s", addr, resp.Code, resp.Remark))
		default:
			if err := protocol.Unmarshal(resp.Body, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: decode body: %w", addr, err))
				continue
			}
			return nil
		}
	}
	return errors.Join(errs...)
}

func cloneExt(ext map[string]string) map[string]string {
	out := make(map[string]string, len(ext)+2)
	for k, v := range ext {
		out[k] = v
	}
	return out
}
