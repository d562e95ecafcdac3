// Command broker runs a RocketMQ-compatible broker. Flags follow Apache's
// mqbroker (-c config file, -n nameservers, -p / -m print the configuration
// and exit) plus a few conveniences; every broker.conf key can also be set
// with --set key=value or the environment variable BROKER_<KEY>
// (listenPort → BROKER_LISTEN_PORT), and NAMESRV_ADDR is honoured as in Java.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/gctuner"
	"github.com/rmqgo/rmq/broker/internal/timerslack"
)

func main() {
	// A GOGC in the environment is the operator's choice; otherwise keep
	// a floor under the collector's headroom (broker/internal/gctuner).
	if _, set := os.LookupEnv("GOGC"); !set {
		tctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = gctuner.Run(tctx, gctuner.DefaultConfig()) }()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Environ(), hooks{
		onStopping: func() {
			// A second signal during shutdown aborts it.
			stop()
			second := make(chan os.Signal, 1)
			signal.Notify(second, syscall.SIGINT, syscall.SIGTERM)
			go func() {
				<-second
				fmt.Fprintln(os.Stderr, "second signal: exiting without finishing shutdown")
				os.Exit(130)
			}()
		},
		timerSlack: applyTimerSlack,
	})
	stop()
	os.Exit(code)
}

type flags struct {
	configFile      string
	namesrvAddr     string
	printAll        bool
	printImportant  bool
	listenPort      int
	storePath       string
	brokerName      string
	clusterName     string
	brokerIP        string
	set             []string
	logLevel        string
	logFormat       string
	shutdownTimeout time.Duration
	pprofAddr       string
	startupProfile  string
}

// hooks are what main does to the process that run must not do in tests.
type hooks struct {
	// onStopping runs when shutdown begins.
	onStopping func()
	// timerSlack, once the config is read, gives the process the
	// configured timer slack (applyTimerSlack: by re-executing it).
	timerSlack func(want time.Duration, environ []string) error
}

// run is main without process globals: ctx ends the broker (signals in
// main). It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string, h hooks) int {
	var f flags
	cmd := &cobra.Command{
		Use:           "broker",
		Short:         "RocketMQ 5.x compatible broker",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(ctx, cmd, f, stdout, stderr, environ, h)
		},
	}
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	fs := cmd.Flags()
	fs.StringVarP(&f.configFile, "configFile", "c", "", "broker config properties file (broker.conf)")
	fs.StringVarP(&f.namesrvAddr, "namesrvAddr", "n", "", `name server address list, e.g. "192.168.0.1:9876;192.168.0.2:9876"`)
	fs.BoolVarP(&f.printAll, "printConfigItem", "p", false, "print all config items and exit")
	fs.BoolVarP(&f.printImportant, "printImportantConfig", "m", false, "print important config items and exit")
	fs.IntVar(&f.listenPort, "listen-port", 0, "listenPort (0 in a config means a free port)")
	fs.StringVar(&f.storePath, "store-path", "", "storePathRootDir")
	fs.StringVar(&f.brokerName, "broker-name", "", "brokerName")
	fs.StringVar(&f.clusterName, "cluster-name", "", "brokerClusterName")
	fs.StringVar(&f.brokerIP, "broker-ip", "", "brokerIP1 (the address registered with name servers)")
	fs.StringArrayVar(&f.set, "set", nil, "override any config key: --set key=value (repeatable)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight requests")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve Go profiles and execution traces on this address under /debug/pprof/ (off when empty; no authentication: use loopback)")
	fs.StringVar(&f.startupProfile, "startup-cpuprofile", "", "write a CPU profile of the start-up (store recovery included), from the command line to serving, to this file")
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(stderr, "broker:", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cmd *cobra.Command, f flags, stdout, stderr io.Writer, environ []string, h hooks) error {
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	stopProfile := func() {}
	if f.startupProfile != "" {
		if stopProfile, err = startCPUProfile(f.startupProfile); err != nil {
			return err
		}
		defer stopProfile() // start-up failed
	}
	overrides := map[string]string{}
	for _, kv := range f.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--set %q: want key=value", kv)
		}
		overrides[strings.TrimSpace(k)] = v
	}
	changed := cmd.Flags().Changed
	if changed("namesrvAddr") {
		overrides["namesrvAddr"] = f.namesrvAddr
	}
	if changed("listen-port") {
		overrides["listenPort"] = strconv.Itoa(f.listenPort)
	}
	if changed("store-path") {
		overrides["storePathRootDir"] = f.storePath
	}
	if changed("broker-name") {
		overrides["brokerName"] = f.brokerName
	}
	if changed("cluster-name") {
		overrides["brokerClusterName"] = f.clusterName
	}
	if changed("broker-ip") {
		overrides["brokerIP1"] = f.brokerIP
	}
	var derived map[string]string
	if f.configFile != "" {
		derived = map[string]string{"brokerConfigPath": f.configFile}
	}

	host := config.LocalHost()
	host.Env = envMap(environ)
	loaded, err := config.Load(config.Source{
		File:      f.configFile,
		Environ:   environ,
		Overrides: overrides,
		Host:      host,
		NoOverlay: f.printAll || f.printImportant,
		Derived:   derived,
	})
	if err != nil {
		return err
	}
	cfg := loaded.Config
	if f.printAll {
		fmt.Fprint(stdout, cfg.PrintProperties())
		return nil
	}
	if f.printImportant {
		fmt.Fprint(stdout, cfg.ImportantProperties())
		return nil
	}
	if h.timerSlack != nil {
		// Before anything is logged or opened: a re-exec starts over.
		if err := h.timerSlack(time.Duration(cfg.TimerSlackMicros)*time.Microsecond, environ); err != nil {
			log.Warn("timer slack not applied", "timerSlackMicros", cfg.TimerSlackMicros, "err", err)
		}
	}
	for _, k := range loaded.Unknown {
		log.Warn("unknown config key ignored", "key", k)
	}
	for _, k := range loaded.Legacy {
		log.Warn("RocketMQ 4.x config key has no effect in 5.x; ignored", "key", k)
	}
	if len(loaded.NoEffect) > 0 {
		log.Warn("accepted with no effect: "+strings.Join(loaded.NoEffect, ", "), "see", "docs/operations.md")
	}
	for _, w := range loaded.Warnings {
		log.Warn(w)
	}
	if len(loaded.OverlayKeys) > 0 {
		log.Info("applied settings changed at runtime", "file", config.OverlayPath(cfg), "keys", loaded.OverlayKeys)
	}

	if f.pprofAddr != "" {
		stopPprof, err := startPprof(f.pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	opts, err := envOptions(host.Env)
	if err != nil {
		return err
	}
	b, err := broker.New(cfg, log, opts...)
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown(context.Background())
		return err
	}
	tip := fmt.Sprintf("The broker[%s, %s] boot success. serializeType=JSON", cfg.BrokerName, b.Addr())
	if cfg.NamesrvAddr != "" {
		tip += " and name server is " + cfg.NamesrvAddr
	}
	fmt.Fprintln(stdout, tip)
	stopProfile()

	<-ctx.Done()
	if h.onStopping != nil {
		h.onStopping()
	}
	began := time.Now()
	log.Info("shutdown hook was invoked")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	err = b.Shutdown(sctx)
	log.Info("shutdown hook over", "consumingMillis", time.Since(began).Milliseconds())
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// startCPUProfile profiles the process's CPU into path until the returned
// function is called (once; later calls do nothing).
func startCPUProfile(path string) (stop func(), err error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--startup-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("--startup-cpuprofile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			out.Close()
		})
	}, nil
}

// Settings that are Java system properties rather than broker.conf keys
// come from the environment, in milliseconds (end-to-end tests shorten
// them).
const (
	// envLockMaxLiveTime is rocketmq.broker.rebalance.lockMaxLiveTime, the
	// orderly lock expiry.
	envLockMaxLiveTime = "ROCKETMQ_BROKER_REBALANCE_LOCKMAXLIVETIME"
	// envLiteExpirationUnit is the unit of the lite.topic.expiration topic
	// attribute.
	envLiteExpirationUnit = "ROCKETMQ_LITE_TOPIC_EXPIRATION_UNIT_MS"
)

// envOptions turns the environment settings into broker options.
func envOptions(env map[string]string) ([]broker.Option, error) {
	var opts []broker.Option
	for _, s := range []struct {
		name   string
		option func(time.Duration) broker.Option
	}{
		{envLockMaxLiveTime, broker.WithLockMaxLiveTime},
		{envLiteExpirationUnit, broker.WithLiteExpirationUnit},
	} {
		v := env[s.name]
		if v == "" {
			continue
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", s.name, v)
		}
		opts = append(opts, s.option(time.Duration(ms)*time.Millisecond))
	}
	return opts, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func envMap(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// applyTimerSlack gives the process the timer slack want
// (broker/internal/timerslack): when the current thread has another, it
// re-executes the broker, so it returns only when nothing was to be done or
// the re-exec failed.
func applyTimerSlack(want time.Duration, environ []string) error {
	if !timerslack.Supported {
		return nil
	}
	cur, err := timerslack.Current()
	if err != nil {
		return err
	}
	again, err := timerslack.Decide(want, cur, environ)
	if !again {
		return err
	}
	return timerslack.Reexec(want, os.Args, environ)
}
