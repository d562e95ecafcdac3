package replica

import (
	"errors"
	"fmt"
	"time"
)

// Config is the broker's controller-mode configuration (broker.conf keys in
// brackets).
type Config struct {
	ClusterName string
	BrokerName  string
	// Controllers returns the controller addresses [controllerAddr].
	Controllers func() []string
	// IdentityPath is the brokerIdentity file [storePathBrokerIdentity].
	IdentityPath string

	HeartbeatInterval   time.Duration // [brokerHeartbeatInterval] 1 s
	HeartbeatTimeout    time.Duration // [controllerHeartBeatTimeoutMills] 10 s, asked of the controller
	SyncPeriod          time.Duration // [syncBrokerMetadataPeriod] 5 s: GET_REPLICA_INFO poll
	LeaderRefreshPeriod time.Duration // [syncControllerMetadataPeriod] 10 s
	RetryInterval       time.Duration // a fenced broker retries registration this often (5 s)
	RequestTimeout      time.Duration // per controller request (3 s)
	// LeaseDuration [masterLeaseMillis]: a master that heard no renewing
	// heartbeat answer for this long fences itself; ≤ 0 disables the lease.
	LeaseDuration    time.Duration
	ElectionPriority int64 // [brokerElectionPriority] lower is preferred

	Clock func() time.Time
}

// DefaultConfig returns Apache's defaults; the lease is the heartbeat
// timeout less 4 s, so it lapses before a controller can elect someone
// else by timeout.
func DefaultConfig() Config {
	return Config{
		HeartbeatInterval:   time.Second,
		HeartbeatTimeout:    10 * time.Second,
		SyncPeriod:          5 * time.Second,
		LeaderRefreshPeriod: 10 * time.Second,
		RetryInterval:       5 * time.Second,
		RequestTimeout:      3 * time.Second,
		LeaseDuration:       6 * time.Second,
		ElectionPriority:    2147483647,
		Clock:               time.Now,
	}
}

// Validate checks a configuration; it changes nothing.
func (c Config) Validate() error {
	var errs []error
	if c.ClusterName == "" || c.BrokerName == "" {
		errs = append(errs, errors.New("cluster and broker names are required"))
	}
	if c.Controllers == nil {
		errs = append(errs, errors.New("no controller address source"))
	}
	if c.IdentityPath == "" {
		errs = append(errs, errors.New("no broker identity path"))
	}
	for name, d := range map[string]time.Duration{
		"heartbeat interval": c.HeartbeatInterval, "heartbeat timeout": c.HeartbeatTimeout,
		"sync period": c.SyncPeriod, "leader refresh period": c.LeaderRefreshPeriod,
		"retry interval": c.RetryInterval, "request timeout": c.RequestTimeout,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	if c.LeaseDuration > 0 && c.LeaseDuration >= c.HeartbeatTimeout {
		errs = append(errs, fmt.Errorf("master lease %v must be shorter than the heartbeat timeout %v", c.LeaseDuration, c.HeartbeatTimeout))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("no clock"))
	}
	return errors.Join(errs...)
}
