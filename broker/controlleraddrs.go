package broker

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
)

// How often fetchControllerAddrByDnsLookup looks the domain up again, and
// how long one look-up may take.
const (
	controllerDNSTTL     = 10 * time.Second
	controllerDNSTimeout = 2 * time.Second
)

// controllerAddrs gives the controllers' addresses from controllerAddr: a
// ';'-separated list, or, with fetchControllerAddrByDnsLookup, every
// address its one domain:port resolves to (Apache's
// BrokerOuterAPI.dnsLookupAddressByDomain; a headless service's name on
// Kubernetes). Apache resolves once at start; here the domain is looked
// up again at most every controllerDNSTTL, so that controllers that move
// to other addresses are followed. A failed look-up keeps the last
// addresses of the same domain.
type controllerAddrs struct {
	cfg    func() *config.Config
	lookup func(ctx context.Context, host string) ([]string, error)
	now    func() time.Time
	log    *slog.Logger

	mu     sync.Mutex
	domain string // the controllerAddr last looked up
	last   []string
	at     time.Time
}

func newControllerAddrs(cfg func() *config.Config, log *slog.Logger) *controllerAddrs {
	return &controllerAddrs{cfg: cfg, lookup: net.DefaultResolver.LookupHost, now: time.Now, log: log}
}

func (c *controllerAddrs) get() []string {
	cfg := c.cfg()
	if !cfg.FetchControllerAddrByDNSLookup {
		return splitAddrs(cfg.ControllerAddr)
	}
	domain := strings.TrimSpace(cfg.ControllerAddr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if domain == c.domain && len(c.last) > 0 && c.now().Sub(c.at) < controllerDNSTTL {
		return c.last
	}
	if domain != c.domain {
		c.domain, c.last = domain, nil
	}
	c.at = c.now()
	host, port, err := net.SplitHostPort(domain)
	if err != nil {
		c.log.Warn("fetchControllerAddrByDnsLookup: controllerAddr is not one domain:port", "controllerAddr", domain, "err", err)
		return c.last
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerDNSTimeout)
	ips, err := c.lookup(ctx, host)
	cancel()
	if err != nil || len(ips) == 0 {
		c.log.Warn("look up the controllers' domain; keeping the last addresses", "controllerAddr", domain, "last", c.last, "err", err)
		return c.last
	}
	slices.Sort(ips)
	out := make([]string, 0, len(ips))
	for _, ip := range slices.Compact(ips) {
		out = append(out, net.JoinHostPort(ip, port))
	}
	if !slices.Equal(out, c.last) {
		c.log.Info("controllers looked up", "controllerAddr", domain, "addresses", out)
	}
	c.last = out
	return out
}
