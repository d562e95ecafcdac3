package client

import (
	"log/slog"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/remoting"
)

// DefaultChannelExpiredTimeout: a channel without heartbeat for this long
// is dropped (Java's channelExpiredTimeout).
const DefaultChannelExpiredTimeout = 120 * time.Second

// ChannelInfo describes one client connection in a group (Java's
// ClientChannelInfo).
type ChannelInfo struct {
	Channel    *remoting.Channel
	ClientID   string
	Language   remoting.LanguageCode
	Version    int32
	LastUpdate time.Time
}

// RemoteAddr is the client's "ip:port" ("" without a channel).
func (c ChannelInfo) RemoteAddr() string {
	if c.Channel == nil {
		return ""
	}
	return c.Channel.RemoteAddr()
}

// Connection is the JSON form of a ChannelInfo in ConsumerConnection and
// ProducerConnection bodies (docs/protocol.md §4.6).
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

func (c ChannelInfo) connection() Connection {
	return Connection{ClientAddr: c.RemoteAddr(), ClientID: c.ClientID, Language: c.Language.String(), Version: c.Version}
}

// ManagerOptions configure the producer and consumer managers.
type ManagerOptions struct {
	// Now is the clock for heartbeat times and expiry (default time.Now).
	Now func() time.Time
	// ChannelExpiredTimeout returns the expiry of a silent channel (default
	// 120 s); a func so that a runtime config change applies.
	ChannelExpiredTimeout func() time.Duration
	// SubscriptionExpiredTimeout returns how long a subscription learned
	// from a pull (not from a heartbeat) is remembered (default 10 min).
	SubscriptionExpiredTimeout func() time.Duration
	Logger                     *slog.Logger
}

func (o ManagerOptions) withDefaults() ManagerOptions {
	defaults.Clock(&o.Now)
	if o.ChannelExpiredTimeout == nil {
		o.ChannelExpiredTimeout = func() time.Duration { return DefaultChannelExpiredTimeout }
	}
	if o.SubscriptionExpiredTimeout == nil {
		o.SubscriptionExpiredTimeout = func() time.Duration { return 10 * time.Minute }
	}
	defaults.Logger(&o.Logger)
	return o
}

// expired reports whether a channel last heard at t is past the timeout.
func expired(now, t time.Time, timeout time.Duration) bool {
	return timeout > 0 && now.Sub(t) > timeout
}
