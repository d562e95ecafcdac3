package client

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// Defaults (Apache's Java client values).
const (
	DefaultProducerGroup         = "DEFAULT_PRODUCER"
	DefaultConsumerGroup         = "DEFAULT_CONSUMER"
	DefaultSendTimeout           = 3 * time.Second
	DefaultRetryTimes            = 2
	DefaultCompressLevel         = 5
	DefaultMaxMessageSize        = 4 << 20
	DefaultTopicQueueNums        = 4
	DefaultRouteRefreshInterval  = 30 * time.Second
	DefaultHeartbeatInterval     = 30 * time.Second
	DefaultRequestTimeout        = 3 * time.Second
	DefaultLongPollingSuspend    = 20 * time.Second
	DefaultPullBatchSize         = 32
	DefaultMaxBodySize           = 64 << 20
	defaultPullTimeoutHeadroom   = 10 * time.Second // long-poll request timeout = suspend + this (Java: 20 s → 30 s)
	clientInnerProducerGroupName = "CLIENT_INNER_PRODUCER"
)

// CommonConfig holds what producers and consumers share. Zero fields take
// their defaults.
type CommonConfig struct {
	// NameServers are "host:port" addresses; an entry may also hold Apache's
	// "a:9876;b:9876" list form.
	NameServers []string
	// InstanceName distinguishes clients of one process in the client id
	// (ip@instance); default "<pid>#<nanotime>", unique per client.
	InstanceName string
	// RequestTimeout bounds nameserver, heartbeat and offset requests;
	// default 3 s.
	RequestTimeout time.Duration
	// RouteRefreshInterval: how often cached routes are refreshed; default 30 s.
	RouteRefreshInterval time.Duration
	// HeartbeatInterval: how often brokers get HEART_BEAT; default 30 s (the
	// first one goes out after at most 1 s).
	HeartbeatInterval time.Duration
	// Credentials, when set, sign every request (brokers with
	// authentication on: ACL 2.0's username and password, or ACL 1.0's
	// access key and secret key).
	Credentials *Credentials
	// SerializeType of request headers: JSON (default, like Java) or
	// ROCKETMQ (compact binary; every broker accepts both).
	SerializeType remoting.SerializeType
	// UseTLS connects over TLS (Java's ClientConfig.setUseTLS / -Dtls.enable=true)
	// without verifying the server, as the Java client does by default
	// (tls.test.mode.enable). For verification and client certificates set
	// Remoting.TLS instead, e.g. from tlsconfig.Settings.ClientConfig.
	UseTLS bool
	// Remoting tunes connections; zero fields take remoting's defaults.
	// Remoting.TLS, when set, is the TLS of every connection (UseTLS then
	// changes nothing).
	Remoting remoting.ClientConfig
	// Logger receives the client's logs; nil discards them.
	Logger *slog.Logger
}

// normalizeGroup is normalize for a client that belongs to a group: an
// empty *group takes def, and the group name must be valid; kind
// ("producer", "consumer") names it in the error.
func (c CommonConfig) normalizeGroup(group *string, def, kind string) (CommonConfig, error) {
	c, err := c.normalize()
	if err != nil {
		return c, err
	}
	if *group == "" {
		*group = def
	}
	if err := protocol.ValidateGroup(*group); err != nil {
		return c, fmt.Errorf("client: %s group: %w", kind, err)
	}
	return c, nil
}

func (c CommonConfig) normalize() (CommonConfig, error) {
	var ns []string
	for _, a := range c.NameServers {
		for _, p := range strings.Split(a, ";") {
			if p = strings.TrimSpace(p); p != "" {
				ns = append(ns, p)
			}
		}
	}
	if len(ns) == 0 {
		return c, ErrNoNameServer
	}
	c.NameServers = ns
	if c.RequestTimeout < 0 || c.RouteRefreshInterval < 0 || c.HeartbeatInterval < 0 {
		return c, fmt.Errorf("client: negative timeout or interval in config")
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RouteRefreshInterval == 0 {
		c.RouteRefreshInterval = DefaultRouteRefreshInterval
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SerializeType != remoting.SerializeJSON && c.SerializeType != remoting.SerializeRocketMQ {
		return c, fmt.Errorf("client: unknown serialize type %v", c.SerializeType)
	}
	if c.UseTLS && c.Remoting.TLS == nil {
		c.Remoting.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // the Java client's default (tls.test.mode.enable)
	}
	if c.Credentials != nil && (c.Credentials.AccessKey == "" || c.Credentials.SecretKey == "") {
		return c, fmt.Errorf("client: credentials need both an access key and a secret key")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// ProducerConfig configures a Producer. Zero fields take their defaults.
type ProducerConfig struct {
	CommonConfig

	// Group is the producer group; default DEFAULT_PRODUCER.
	Group string
	// SendTimeout bounds one send including its retries; default 3 s. A
	// shorter ctx deadline wins.
	SendTimeout time.Duration
	// RetryTimesWhenSendFailed: extra attempts on another broker for sync and
	// async sends; 0 means the default 2, negative means none.
	RetryTimesWhenSendFailed int
	// CompressOver: bodies of at least this many bytes are zlib-compressed
	// (single messages only); 0 means 4096, negative disables compression.
	CompressOver int
	// CompressLevel is the zlib level (1-9); default 5 like both clients.
	CompressLevel int
	// MaxMessageSize limits a body (a batch's encoded body); default 4 MiB.
	MaxMessageSize int
	// CreateTopicKey is the template topic for auto-creation; default TBW102.
	CreateTopicKey string
	// DefaultTopicQueueNums is the queue count asked for when a send
	// auto-creates a topic; default 4.
	DefaultTopicQueueNums int
	// DisableFaultAvoidance turns off skipping brokers that failed or
	// answered slowly (Java's sendLatencyFaultEnable, which is on here by
	// default: after a broker dies, sends stop trying it first).
	DisableFaultAvoidance bool
}

func (c ProducerConfig) normalize() (ProducerConfig, error) {
	var err error
	if c.CommonConfig, err = c.CommonConfig.normalizeGroup(&c.Group, DefaultProducerGroup, "producer"); err != nil {
		return c, err
	}
	if c.SendTimeout < 0 || c.MaxMessageSize < 0 || c.DefaultTopicQueueNums < 0 {
		return c, fmt.Errorf("client: negative SendTimeout, MaxMessageSize or DefaultTopicQueueNums")
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	switch {
	case c.RetryTimesWhenSendFailed == 0:
		c.RetryTimesWhenSendFailed = DefaultRetryTimes
	case c.RetryTimesWhenSendFailed < 0:
		c.RetryTimesWhenSendFailed = 0
	}
	if c.CompressOver == 0 {
		c.CompressOver = message.CompressBodyThreshold
	}
	if c.CompressLevel == 0 {
		c.CompressLevel = DefaultCompressLevel
	}
	if c.CompressLevel < 1 || c.CompressLevel > 9 {
		return c, fmt.Errorf("client: CompressLevel %d out of range 1-9", c.CompressLevel)
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.CreateTopicKey == "" {
		c.CreateTopicKey = protocol.AutoCreateTopicKey
	}
	if c.DefaultTopicQueueNums == 0 {
		c.DefaultTopicQueueNums = DefaultTopicQueueNums
	}
	return c, nil
}

// PullConsumerConfig configures a PullConsumer. Zero fields take their
// defaults.
type PullConsumerConfig struct {
	CommonConfig

	// Group is the consumer group used for pulls and offsets; default
	// DEFAULT_CONSUMER.
	Group string
	// LongPollingSuspend is how long the broker may hold a pull that finds
	// nothing when a PullRequest asks for long polling; default 20 s.
	LongPollingSuspend time.Duration
	// MaxBodySize bounds a decompressed body; default 64 MiB.
	MaxBodySize int
}

func (c PullConsumerConfig) normalize() (PullConsumerConfig, error) {
	var err error
	if c.CommonConfig, err = c.CommonConfig.normalizeGroup(&c.Group, DefaultConsumerGroup, "consumer"); err != nil {
		return c, err
	}
	if c.LongPollingSuspend < 0 || c.MaxBodySize < 0 {
		return c, fmt.Errorf("client: negative LongPollingSuspend or MaxBodySize")
	}
	if c.LongPollingSuspend == 0 {
		c.LongPollingSuspend = DefaultLongPollingSuspend
	}
	if c.MaxBodySize == 0 {
		c.MaxBodySize = DefaultMaxBodySize
	}
	return c, nil
}
