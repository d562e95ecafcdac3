package ha

import (
	"crypto/tls"
	"log/slog"
	"time"
)

// Options tune both sides; zero values take Apache's defaults.
type Options struct {
	// HeartbeatInterval is haSendHeartbeatInterval: an idle side sends a
	// keep-alive (a report, or a header with no body) this often.
	HeartbeatInterval time.Duration
	// HousekeepingInterval is haHousekeepingInterval: a connection that
	// received nothing for this long is closed.
	HousekeepingInterval time.Duration
	// TransferBatchSize is haTransferBatchSize: max body bytes per frame.
	TransferBatchSize int
	// MaxGapNotInSync is haMaxGapNotInSync: a slave whose ack is at least
	// this far behind the master's max offset is reported as not in sync.
	MaxGapNotInSync int64
	// MaxTransferBytesPerSecond caps the body bytes a master sends to one
	// slave per second (haFlowControlEnable with maxHaTransferByteInSecond);
	// 0: no cap.
	MaxTransferBytesPerSecond int64
	// ReconnectDelay is how long a slave waits before reconnecting after a
	// failed or closed connection (Apache: 5 s).
	ReconnectDelay time.Duration
	// DialTimeout bounds a slave's connect.
	DialTimeout time.Duration
	// PollInterval is how often an idle master connection looks for new
	// CommitLog bytes when nothing woke it (Master.Wake).
	PollInterval time.Duration
	// TLS, when set, makes a slave's connection to its master TLS
	// (tls.enable); the handshake is bounded by DialTimeout.
	TLS    *tls.Config
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HeartbeatInterval, 5*time.Second)
	def(&o.HousekeepingInterval, 20*time.Second)
	def(&o.ReconnectDelay, 5*time.Second)
	def(&o.DialTimeout, 3*time.Second)
	def(&o.PollInterval, 20*time.Millisecond)
	if o.TransferBatchSize <= 0 {
		o.TransferBatchSize = 32 << 10
	}
	o.TransferBatchSize = min(o.TransferBatchSize, MaxTransferBody)
	if o.MaxGapNotInSync <= 0 {
		o.MaxGapNotInSync = 256 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
