package broker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
)

// TestControllerAddrs: a list as written; with
// fetchControllerAddrByDnsLookup every address of the domain (IPv6 in
// brackets), looked up again after the TTL, the last addresses kept when a
// look-up fails, forgotten when controllerAddr names another domain.
func TestControllerAddrs(t *testing.T) {
	cfg := &config.Config{}
	cfg.ControllerAddr = " 10.0.0.1:9878 ;10.0.0.2:9878;"
	now := time.Unix(1000, 0)
	lookups := 0
	answer := []string{"10.0.0.7", "::1", "10.0.0.5", "10.0.0.7"}
	var fail error
	c := &controllerAddrs{cfg: func() *config.Config { return cfg }, now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler),
		lookup: func(_ context.Context, host string) ([]string, error) {
			lookups++
			if host != "controllers.rmq.svc" && host != "other.svc" {
				return nil, errors.New("no such host " + host)
			}
			return slices.Clone(answer), fail
		}}
	if got := c.get(); !slices.Equal(got, []string{"10.0.0.1:9878", "10.0.0.2:9878"}) || lookups != 0 {
		t.Fatalf("list: %v (%d look-ups)", got, lookups)
	}
	cfg.FetchControllerAddrByDNSLookup = true
	cfg.ControllerAddr = "controllers.rmq.svc:9878"
	want := []string{"10.0.0.5:9878", "10.0.0.7:9878", "[::1]:9878"}
	for range 3 {
		if got := c.get(); !slices.Equal(got, want) {
			t.Fatalf("looked up: %v, want %v", got, want)
		}
	}
	if lookups != 1 {
		t.Fatalf("%d look-ups within the TTL, want 1", lookups)
	}
	now = now.Add(controllerDNSTTL)
	fail = errors.New("SERVFAIL")
	if got := c.get(); !slices.Equal(got, want) || lookups != 2 {
		t.Fatalf("failed look-up after the TTL: %v (%d look-ups), want the last addresses", got, lookups)
	}
	now = now.Add(controllerDNSTTL)
	fail, answer = nil, []string{"10.0.0.9"}
	if got := c.get(); !slices.Equal(got, []string{"10.0.0.9:9878"}) {
		t.Fatalf("moved controllers: %v", got)
	}
	cfg.ControllerAddr = "nowhere.svc:9878"
	if got := c.get(); len(got) != 0 {
		t.Fatalf("another domain that does not resolve: %v, want none (not the old domain's)", got)
	}
}
