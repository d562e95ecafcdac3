// Command namesrv runs a RocketMQ nameserver, started like Apache's mqnamesrv:
//
//	namesrv -c namesrv.conf        # Apache properties file
//	namesrv -p                     # print every configuration item and exit
//	namesrv -m                     # print the important items and exit
//	namesrv controller -c ctl.conf # run only the HA controller (docs/operations.md)
//
// With enableControllerInNamesrv=true the nameserver also runs the HA
// controller on its controllerDLegerPeers address.
//
// Configuration precedence: defaults < file < NAMESRV_* environment
// (NAMESRV_LISTEN_PORT=9877) < flags (--listen-port, --data-dir,
// --kv-config-path).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	pkgconfig "github.com/rmqgo/rmq/pkg/config"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd := newCommand(ctx, os.Stdout, os.Stderr, os.Environ())
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "namesrv:", err)
		os.Exit(1)
	}
}

// serverFlags are the options of the nameserver and of the standalone
// controller alike.
type serverFlags struct {
	configFile string
	printAll   bool
	logLevel   string
}

// register adds the options to cmd; what names the config file's owner in
// its usage.
func (f *serverFlags) register(cmd *cobra.Command, what string) {
	fs := cmd.Flags()
	fs.StringVarP(&f.configFile, "configFile", "c", "", what+" config properties file")
	fs.BoolVarP(&f.printAll, "printConfigItem", "p", false, "print all config items and exit")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// warnUnknown logs the config file's keys the loader did not know.
func (f *serverFlags) warnUnknown(log *slog.Logger, unknown []string) {
	for _, k := range pkgconfig.Spelled(unknown, f.configFile) {
		log.Warn("unknown config key ignored", "key", k, "file", f.configFile)
	}
}

// warnNoEffect logs, in one line, the keys the configuration sets that
// change nothing (docs/operations.md "Accepted keys with no effect").
func warnNoEffect(log *slog.Logger, keys []string) {
	if len(keys) > 0 {
		log.Warn("accepted with no effect: "+strings.Join(keys, ", "), "see", "docs/operations.md")
	}
}

type flags struct {
	serverFlags
	printImport  bool
	listenPort   int
	dataDir      string
	kvConfigPath string
	namesrvAddr  string
}

// newCommand builds the CLI; ctx ends the server (signals in main, tests
// cancel it).
func newCommand(ctx context.Context, stdout, stderr io.Writer, environ []string) *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:           "namesrv",
		Short:         "RocketMQ nameserver",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(ctx, cmd, &f, stdout, stderr, environ)
		},
	}
	f.register(cmd, "nameserver")
	fs := cmd.Flags()
	fs.BoolVarP(&f.printImport, "printImportantConfig", "m", false, "print important config items and exit")
	fs.IntVar(&f.listenPort, "listen-port", 0, "listen port (overrides listenPort)")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory for relative kvConfigPath/configStorePath (default $HOME/namesrv)")
	fs.StringVar(&f.kvConfigPath, "kv-config-path", "", "KV config file (overrides kvConfigPath)")
	// Apache's launcher accepts -n; a nameserver has no use for it.
	fs.StringVarP(&f.namesrvAddr, "namesrvAddr", "n", "", "ignored (Apache compatibility)")
	_ = fs.MarkHidden("namesrvAddr")
	cmd.AddCommand(newControllerCommand(ctx, stdout, stderr, environ))
	return cmd
}

func run(ctx context.Context, cmd *cobra.Command, f *flags, stdout, stderr io.Writer, environ []string) error {
	log, err := newLogger(f.logLevel, stderr)
	if err != nil {
		return err
	}

	overrides := map[string]string{}
	if cmd.Flags().Changed("listen-port") {
		overrides["listenPort"] = strconv.Itoa(f.listenPort)
	}
	if f.dataDir != "" {
		overrides["dataDir"] = f.dataDir
	}
	if f.kvConfigPath != "" {
		overrides["kvConfigPath"] = f.kvConfigPath
	}
	home := homeDir()
	cfg, set, unknown, err := nsconfig.LoadKeys(nsconfig.Source{File: f.configFile, EnvPrefix: nsconfig.EnvPrefix, Environ: environ, Overrides: overrides}, home)
	f.warnUnknown(log, unknown)
	if err != nil {
		return err
	}
	if f.configFile != "" {
		fmt.Fprintf(stdout, "load config properties file OK, %s\n", f.configFile)
	}
	if f.printAll || f.printImport {
		if f.printAll {
			fmt.Fprint(stdout, cfg.PrintProperties())
		} else {
			fmt.Fprint(stdout, cfg.ImportantProperties())
		}
		return nil
	}
	warnNoEffect(log, nsconfig.NoEffectSet(set))

	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "The Name Server boot success. serializeType=JSON, address %s\n", bootAddr(cfg.BindAddress, srv.Addr()))

	<-ctx.Done()
	log.Info("shutdown requested")
	wait := time.Duration(cfg.ShutdownWaitTimeSeconds) * time.Second
	if wait <= 0 {
		wait = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// newLogger logs text to stderr at the --log-level.
func newLogger(levelName string, stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(levelName)); err != nil {
		return nil, fmt.Errorf("bad --log-level %q: %w", levelName, err)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

// homeDir is where default paths live ($HOME; the working directory if
// unknown).
func homeDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return "."
	}
	return home
}

// bootAddr is what Apache prints, bindAddress:port, with the port actually
// bound (listenPort 0 picks one).
func bootAddr(bind, actual string) string {
	_, port, err := net.SplitHostPort(actual)
	if err != nil || bind == "" {
		return actual
	}
	return net.JoinHostPort(bind, port)
}
