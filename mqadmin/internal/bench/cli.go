package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
)

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitError = 1 // a run failed, or --flush-check found missing messages
	ExitUsage = 2
)

// Apache's default ACL credentials of the benchmark tools (AclClient).
const (
	defaultAccessKey = "rocketmq2"
	defaultSecretKey = "12345678"
)

// multiLetter maps Apache's multi-letter short options to their long names.
func multiLetter() map[string]string {
	return map[string]string{
		"ri": "reportInterval", "ak": "accessKey", "sk": "secretKey",
		"ct": "compressType", "cl": "compressLevel", "ch": "compressOverHowMuch",
	}
}

// Main runs mqbench with args (without the program name) and returns the
// exit code. getenv supplies NAMESRV_ADDR when -n is absent.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	root := newRoot(ctx, stdout, stderr, getenv)
	var longs []string
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) { longs = append(longs, f.Name) })
	}
	root.SetArgs(NormalizeArgs(args, multiLetter(), longs))
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		fmt.Fprintln(stderr, ee.err)
		return ee.code
	default: // cobra's own usage errors
		fmt.Fprintln(stderr, "Error:", err)
		return ExitUsage
	}
}

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

// runFailed is the exit error of a mode's run that failed with err ("mqbench
// <mode>: err", exit 1), or nil when err is nil.
func runFailed(mode string, err error) error {
	if err == nil {
		return nil
	}
	return exitError{ExitError, fmt.Errorf("mqbench %s: %w", mode, err)}
}

func newRoot(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "mqbench",
		Short: "Benchmark any RocketMQ cluster over the remoting protocol (Apache's benchmark/producer.sh and consumer.sh)",
		Long: `mqbench drives RocketMQ nameservers and brokers (Apache's or ours) with the options and
the report lines of Apache's benchmark tools. Every report interval (10 s) it prints
the rate over the last 10 seconds; at the end it prints the totals, latency
percentiles and, with --json, one JSON line for scripts.

Boolean options of the Apache tools take a value, as there: "-k true".`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetContext(ctx)
	root.AddCommand(newProducerCmd(stdout, stderr, getenv), newConsumerCmd(stdout, stderr, getenv), newLiteConsumerCmd(stdout, stderr, getenv))
	return root
}

// common options of both commands.
type commonFlags struct {
	namesrv           string
	topic             string
	trace, acl        JavaBool
	accessKey, secret string
	toolsConfig       string
	reportIntervalMS  int
	duration          time.Duration
	json, verbose     bool
	useTLS            bool
	tlsConfigFile     string
}

// register adds the flags every mode shares to cmd and returns its flag
// set for the mode's own.
func (c *commonFlags) register(cmd *cobra.Command) *pflag.FlagSet {
	fs := cmd.Flags()
	fs.StringVarP(&c.namesrv, "namesrvAddr", "n", "", "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876' (default $NAMESRV_ADDR, else 127.0.0.1:9876)")
	fs.StringVarP(&c.topic, "topic", "t", DefaultTopic, "Topic name")
	fs.VarP(&c.trace, "msgTraceEnable", "m", "Message Trace Enable (not supported; ignored), Default: false")
	fs.VarP(&c.acl, "aclEnable", "a", "Acl Enable, Default: false")
	fs.StringVar(&c.accessKey, "accessKey", defaultAccessKey, "Acl access key (-ak)")
	fs.StringVar(&c.secret, "secretKey", defaultSecretKey, "Acl secret key (-sk)")
	fs.StringVar(&c.toolsConfig, "toolsConfig", "", "YAML file with accessKey and secretKey (Apache's conf/tools.yml); turns ACL on with its keys unless -ak/-sk are given")
	fs.IntVar(&c.reportIntervalMS, "reportInterval", 10000, "The number of ms between reports (-ri)")
	fs.DurationVar(&c.duration, "duration", 0, "Stop after this long, e.g. 60s (default: run until the quantity is sent or Ctrl-C)")
	fs.BoolVar(&c.json, "json", false, "Print a final one-line JSON summary")
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "Log client warnings and failed sends to stderr")
	fs.BoolVar(&c.useTLS, "tls", false, "Connect over TLS (the Java benchmark's -Dtls.enable=true)")
	fs.StringVar(&c.tlsConfigFile, "tlsConfigFile", tlsconfig.DefaultConfigFile, "With --tls: properties file of tls.client.* and tls.test.mode.enable keys, read when it exists (Java's -Dtls.config.file)")
	return fs
}

// options are the RunOptions the flags give, writing to stdout and stderr.
func (c *commonFlags) options(cmd *cobra.Command, getenv func(string) string, stdout, stderr io.Writer) (RunOptions, error) {
	keysGiven := cmd.Flags().Changed("accessKey") || cmd.Flags().Changed("secretKey")
	ns, cred, log, err := c.resolve(getenv, stderr, keysGiven)
	if err != nil {
		return RunOptions{}, exitError{ExitUsage, err}
	}
	o := RunOptions{
		NameServer: ns, Topic: strings.TrimSpace(c.topic), Credentials: cred, Logger: log,
		ReportInterval: time.Duration(c.reportIntervalMS) * time.Millisecond, Duration: c.duration, JSON: c.json,
		Out: stdout, Err: stderr,
	}
	if c.useTLS {
		s := tlsconfig.Defaults()
		s.Enable, s.ConfigFile = true, c.tlsConfigFile
		if s, err = s.Load(); err != nil {
			return o, exitError{ExitUsage, err}
		}
		if o.TLS, err = s.ClientConfig(); err != nil {
			return o, exitError{ExitUsage, err}
		}
	}
	return o, nil
}

// resolve reads the name servers, the credentials (-a with -ak/-sk as
// Apache's benchmark tools; --toolsConfig also turns ACL on, its keys used
// unless -ak/-sk were given) and the log level.
func (c *commonFlags) resolve(getenv func(string) string, stderr io.Writer, keysGiven bool) (ns string, cred *client.Credentials, log *slog.Logger, err error) {
	ns = strings.TrimSpace(c.namesrv)
	if ns == "" {
		ns = strings.TrimSpace(getenv("NAMESRV_ADDR"))
	}
	if ns == "" {
		ns = "127.0.0.1:9876"
	}
	if c.acl {
		cred = &client.Credentials{AccessKey: c.accessKey, SecretKey: c.secret}
	}
	if c.toolsConfig != "" {
		fileCred, err := credentials.ReadToolsConfig(c.toolsConfig)
		if err != nil {
			return "", nil, nil, err
		}
		if fileCred == nil {
			return "", nil, nil, fmt.Errorf("%s: accessKey or secretKey is blank", c.toolsConfig)
		}
		if !keysGiven {
			cred = fileCred
		} else {
			cred = &client.Credentials{AccessKey: c.accessKey, SecretKey: c.secret}
		}
	}
	if c.trace {
		fmt.Fprintln(stderr, "mqbench: message trace is not supported; -m is ignored")
	}
	level := slog.LevelError
	if c.verbose {
		level = slog.LevelDebug
	}
	log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	return ns, cred, log, nil
}

func newProducerCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	var (
		c                            commonFlags
		o                            ProducerOptions
		keys, delay, async, compress JavaBool
		compressType                 string
		flushCheck                   bool
	)
	cmd := &cobra.Command{
		Use:   "producer",
		Short: "Send messages as fast as possible (Apache's benchmark Producer; BatchProducer with -b > 1)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.EqualFold(compressType, "ZLIB") {
				return exitError{ExitUsage, fmt.Errorf("compress type %s is not supported (only ZLIB)", compressType)}
			}
			var err error
			if o.RunOptions, err = c.options(cmd, getenv, stdout, stderr); err != nil {
				return err
			}
			o.KeyEnable, o.DelayEnable, o.Async, o.CompressEnable, o.FlushCheck = bool(keys), bool(delay), bool(async), bool(compress), flushCheck
			sum, err := RunProducer(cmd.Context(), o)
			if err != nil {
				return runFailed("producer", err)
			}
			if fc := sum.FlushCheck; fc != nil && !fc.OK {
				return exitError{ExitError, errors.New("mqbench producer: flush check failed")}
			}
			return nil
		},
	}
	fs := c.register(cmd)
	fs.IntVarP(&o.Threads, "threadCount", "w", 64, "Thread count (async mode uses 1)")
	fs.IntVarP(&o.MessageSize, "messageSize", "s", 128, "Message Size")
	fs.VarP(&keys, "keyEnable", "k", "Message Key Enable, Default: false")
	fs.IntVarP(&o.PropertySize, "propertySize", "p", 0, "Property Size")
	fs.IntVarP(&o.TagCount, "tagCount", "l", 0, "Tag count")
	fs.Int64VarP(&o.MessageQuantity, "messageQuantity", "q", 0, "Send message quantity, 0: running forever")
	fs.VarP(&delay, "delayEnable", "d", "Delay message Enable, Default: false")
	fs.IntVarP(&o.DelayLevel, "delayLevel", "e", 1, "Delay message level")
	fs.VarP(&async, "asyncEnable", "y", "Enable async produce, Default: false")
	fs.VarP(&compress, "compressEnable", "c", "Enable compress msg over 4K, Default: false")
	fs.StringVar(&compressType, "compressType", "ZLIB", "Message compressed type (-ct; only ZLIB)")
	fs.IntVar(&o.CompressLevel, "compressLevel", 5, "Message compressed level (-cl)")
	fs.IntVar(&o.CompressOver, "compressOverHowMuch", 4096, "Compress message when body over how much (unit Byte) (-ch)")
	fs.IntVarP(&o.BatchSize, "batchSize", "b", 1, "Batch Size: > 1 sends batches (BatchProducer's report line)")
	fs.StringVar(&o.Group, "group", DefaultProducerGroup, "Producer group")
	fs.Float64Var(&o.Rate, "rate", 0, "Send at this many requests per second in all (open loop: latency counts from when each send was due; one uncounted warm-up send first); 0: as fast as the threads go")
	fs.BoolVar(&flushCheck, "flush-check", false, "At the end, check that the topic's queues grew by every acknowledged message (exit 1 if not)")
	fs.IntVar(&o.LiteTopics, "lite-topics", 0, "Lite mode: -t is a LITE parent topic and messages name lite topics <lite-prefix>0 … N-1 (one per batch)")
	fs.StringVar(&o.LitePrefix, "lite-prefix", DefaultLitePrefix, "Lite mode: name prefix of the lite topics")
	fs.BoolVar(&o.LiteRandom, "lite-random", false, "Lite mode: pick lite topics at random (default: round-robin)")
	return cmd
}

func newLiteConsumerCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	var (
		c commonFlags
		o LiteConsumerOptions
	)
	cmd := &cobra.Command{
		Use:   "lite-consumer",
		Short: "Consume lite topics of a LITE parent topic with a lite push consumer and report rates and delays",
		Long: `lite-consumer subscribes a lite group (one whose lite.bind.topic is the -t parent) to a
fraction of the lite topics the producer's lite mode sends to (producer --lite-topics N) and
reports the receive rate and the born→consumed and stored→consumed times. Create the parent
with updateTopic -a +message.type=LITE and the group with updateSubGroup --attributes
+lite.bind.topic=<parent> first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.RunOptions, err = c.options(cmd, getenv, stdout, stderr); err != nil {
				return err
			}
			_, err = RunLiteConsumer(cmd.Context(), o)
			return runFailed("lite-consumer", err)
		},
	}
	fs := c.register(cmd)
	fs.IntVarP(&o.Threads, "threadCount", "w", 20, "Thread count: handler calls at once (one per lite topic at a time)")
	fs.StringVarP(&o.Group, "group", "g", DefaultLiteConsumerGroup, "Lite consumer group (lite.bind.topic = the topic)")
	fs.IntVar(&o.LiteTopics, "lite-topics", 0, "Lite topics the producer sends to (<lite-prefix>0 … N-1); required")
	fs.StringVar(&o.LitePrefix, "lite-prefix", DefaultLitePrefix, "Name prefix of the lite topics")
	fs.Float64Var(&o.Fraction, "lite-fraction", 1, "Fraction of the lite topics to subscribe to (rounded up)")
	fs.IntVar(&o.First, "lite-first", 0, "Index of the first lite topic subscribed (the slice wraps around)")
	fs.DurationVar(&o.InvisibleTime, "invisible-time", 30*time.Second, "Invisible time of popped messages")
	fs.BoolVar(&o.FromMax, "from-max", false, "Skip what the lite topics hold already (subscribe with the MAX offset policy); default: the group's position, a new group from the start of a new lite topic")
	fs.Int64Var(&o.Count, "count", 0, "Stop after consuming this many messages")
	return cmd
}

func newConsumerCmd(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	var (
		c                 commonFlags
		o                 ConsumerOptions
		suffix, rebalance JavaBool
	)
	cmd := &cobra.Command{
		Use:   "consumer",
		Short: "Consume every queue of a topic and report rates and delays (Apache's benchmark Consumer)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.RunOptions, err = c.options(cmd, getenv, stdout, stderr); err != nil {
				return err
			}
			o.GroupSuffix = bool(suffix)
			_ = rebalance // Java's client/server rebalance switch: one instance consumes every queue here
			_, err = RunConsumer(cmd.Context(), o)
			return runFailed("consumer", err)
		},
	}
	fs := c.register(cmd)
	fs.IntVarP(&o.Threads, "threadCount", "w", 20, "Thread count: handler calls at once")
	fs.StringVarP(&o.Group, "group", "g", DefaultConsumerGroup, "Consumer group name")
	fs.VarP(&suffix, "group-suffix", "p", "Is group suffix enable (group_<ms%100>), Default: false")
	fs.StringVarP(&o.FilterType, "filterType", "f", "", "TAG, SQL92")
	fs.StringVarP(&o.ExpressionFile, "expression", "e", "", "filter expression content file path.ie: ./test/expr")
	fs.Float64VarP(&o.FailRate, "fail-rate", "r", 0, "consumer fail rate (counted only: failed messages are not redelivered)")
	fs.VarP(&rebalance, "clientRebalance", "c", "Java's client rebalance switch (ignored: this consumer pulls every queue)")
	fs.Int64Var(&o.Count, "count", 0, "Stop after consuming this many messages")
	fs.BoolVar(&o.FromFirst, "from-first", false, "A group without committed offsets starts at the oldest message (default: the newest, as Java)")
	return cmd
}
