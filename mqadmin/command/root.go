// Package command implements the mqadmin sub-commands: the names, options
// and stdout output of Apache RocketMQ's Java mqadmin (rocketmq-tools), on
// top of package admin.
//
// Unlike the Java tool, a failure prints a message to stderr and exits
// non-zero (1; 2 for usage errors), and every command also has
// "--output json" for machine-readable output. Every command signs its
// requests (servers with authentication on) with -ak/-sk, else the
// --toolsConfig file, else $ROCKETMQ_HOME/conf/tools.yml as the Java tool
// (app.credentials).
//
// Adding a command: write a constructor newXxx(a *app) *cobra.Command using
// newCmd, declare options with stringOpt/boolOpt and the Java short and long
// names (multi-letter short names such as "qn" work: NormalizeArgs rewrites
// them), wrap the body with a.run, talk to servers only through
// *admin.Client (a.withClient), print Java's format strings to a.env.Stdout
// (or writeJSON when a.json()), return usagef(...) for bad arguments, and
// list the constructor in newRoot in the Java tool's order. Collections the
// Java tool iterates in hash order go through javaHashOrder.
package command

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/tlsconfig"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Env is everything a command touches outside itself; tests inject fakes.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (NAMESRV_ADDR).
	Getenv func(string) string
	// Log receives debug logs of the admin client; nil discards them.
	Log *slog.Logger
	// Now and Location drive time-dependent output (clusterList #Hour,
	// topicStatus #Last Updated).
	Now      func() time.Time
	Location *time.Location
	// Dial builds the admin client; nil means admin.New.
	Dial func(cfg admin.Config, log *slog.Logger) (*admin.Client, error)
	// MsgBodyDir is where queryMsgById, queryMsgByUniqueKey and
	// queryMsgByOffset write message bodies; "" means the Java tool's
	// /tmp/rocketmq/msgbodys.
	MsgBodyDir string
	// IsTerminal reports whether a writer is a terminal (progress bars are
	// drawn only there); nil checks for a character device.
	IsTerminal func(io.Writer) bool
}

func (e *Env) fill() {
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.Getenv == nil {
		e.Getenv = func(string) string { return "" }
	}
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Location == nil {
		e.Location = time.Local
	}
	if e.Dial == nil {
		e.Dial = admin.New
	}
	if e.MsgBodyDir == "" {
		e.MsgBodyDir = javaMsgBodyDir
	}
	if e.IsTerminal == nil {
		e.IsTerminal = isTerminal
	}
}

// app is the state shared by the commands of one invocation.
type app struct {
	env *Env

	namesrvAddr   string // -n
	output        string // --output
	useTLS        bool   // --tls
	tlsConfigFile string // --tlsConfigFile

	accessKey, secretKey string // -ak, -sk
	toolsConfig          string // --toolsConfig

	ran bool // a command's RunE started: later errors are not usage errors

	commands []*cobra.Command // in the Java tool's listing order
}

// usageError marks an error caused by the command line (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// partialError reports that some of the work failed after the output was
// written (the failures were already printed to stderr).
type partialError struct{ n int }

func (e *partialError) Error() string { return fmt.Sprintf("%d operation(s) failed", e.n) }

const (
	outputText = "text"
	outputJSON = "json"
)

// json reports whether --output json was given.
func (a *app) json() bool { return a.output == outputJSON }

// emit writes v as JSON to stdout with --output json, else has text print
// the text form to stdout.
func (a *app) emit(v any, text func(w io.Writer)) error {
	if a.json() {
		return writeJSON(a.env.Stdout, v)
	}
	text(a.env.Stdout)
	return nil
}

// nameServers resolves -n, then NAMESRV_ADDR.
func (a *app) nameServers() []string {
	if a.namesrvAddr != "" {
		return admin.ParseNameServers(a.namesrvAddr)
	}
	return admin.ParseNameServers(a.env.Getenv("NAMESRV_ADDR"))
}

// credentials resolves what signs the requests: -ak/-sk, else the
// --toolsConfig file, else $ROCKETMQ_HOME/conf/tools.yml when it exists (the
// Java tool's only source); nil means unsigned. As the Java tool, a file
// whose accessKey or secretKey is blank means unsigned.
func (a *app) credentials() (*credentials.Credentials, error) {
	ak, sk := strings.TrimSpace(a.accessKey), strings.TrimSpace(a.secretKey)
	if ak != "" || sk != "" {
		c := &credentials.Credentials{AccessKey: ak, SecretKey: sk}
		if err := c.Validate(); err != nil {
			return nil, usagef("-ak and -sk go together: %v", err)
		}
		return c, nil
	}
	if a.toolsConfig != "" {
		return credentials.ReadToolsConfig(a.toolsConfig)
	}
	home := a.env.Getenv("ROCKETMQ_HOME")
	if home == "" {
		return nil, nil
	}
	path := filepath.Join(home, credentials.ToolsConfigFile)
	if _, err := os.Stat(path); err != nil {
		return nil, nil // the Java tool then signs nothing
	}
	return credentials.ReadToolsConfig(path)
}

// tlsConfig is the client TLS of --tls (nil without it): Apache's client
// semantics of the tls.* keys in --tlsConfigFile (pkg/tlsconfig).
func (a *app) tlsConfig() (*tls.Config, error) {
	if !a.useTLS {
		return nil, nil
	}
	s := tlsconfig.Defaults()
	s.Enable, s.ConfigFile = true, a.tlsConfigFile
	s, err := s.Load()
	if err != nil {
		return nil, err
	}
	return s.ClientConfig()
}

// client dials the admin client; the caller closes it.
func (a *app) client() (*admin.Client, error) {
	cred, err := a.credentials()
	if err != nil {
		return nil, err
	}
	tc, err := a.tlsConfig()
	if err != nil {
		return nil, err
	}
	c, err := a.env.Dial(admin.Config{NameServers: a.nameServers(), Credentials: cred, TLS: tc}, a.env.Log)
	if err != nil {
		return nil, fmt.Errorf("create admin client: %w", err)
	}
	return c, nil
}

// withClient runs f with a fresh client, closed afterwards.
func (a *app) withClient(f func(c *admin.Client) error) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

// warn prints a failure that does not stop the command.
func (a *app) warn(format string, args ...any) {
	fmt.Fprintf(a.env.Stderr, "mqadmin: "+format+"\n", args...)
}

// run wraps a command body: it marks the invocation as past argument
// parsing and validates --output.
func (a *app) run(f func(cmd *cobra.Command) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected argument(s): %s", strings.Join(args, " "))
		}
		if a.output != outputText && a.output != outputJSON {
			return usagef("invalid --output %q: want text or json", a.output)
		}
		a.ran = true
		return f(cmd)
	}
}

// NewRoot builds the command tree for one invocation (for documentation
// generators and embedding; Main also rewrites Java-style arguments with
// NormalizeArgs before executing it).
func NewRoot(env *Env) *cobra.Command {
	env.fill()
	a := &app{env: env}
	return newRoot(a)
}

// notProvided gives the reason for each of the Java tool's commands (5.5.0)
// that act on parts of Apache's broker this one does not have, answered
// instead of "not exist".
func notProvided(name string) (string, bool) {
	switch name {
	case "addBroker", "removeBroker":
		return "it starts or stops a broker inside Apache's BrokerContainer, which this broker does not have", true
	case "checkRocksdbCqWriteProgress":
		return "it checks Apache's RocksDB consume queue; this broker's consume queues are always in Pebble, written by the CommitLog dispatch", true
	case "exportMetadataInRocksDB", "rocksDBConfigToJson":
		return "it reads Apache's RocksDB metadata store; this broker keeps its metadata in JSON files", true
	case "dumpCompactionLog":
		return "it reads Apache's compaction log files, which this broker does not write", true
	case "switchTimerEngine":
		return "it switches Apache's timer between its engines; this broker has one timer engine", true
	}
	return "", false
}

// notProvidedCommand is the usage error for a command line naming one of
// notProvided's commands first (nil for any other).
func notProvidedCommand(args []string) error {
	if len(args) == 0 {
		return nil
	}
	why, ok := notProvided(args[0])
	if !ok {
		return nil
	}
	return usagef("The sub command %s is not provided here: %s (docs/operations.md, \"mqadmin commands\").", args[0], why)
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "mqadmin",
		Short:         "RocketMQ admin tool",
		SilenceErrors: true,
		SilenceUsage:  true,
		// The Java tool lists its commands when run without one.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if err := notProvidedCommand(args); err != nil {
					return err
				}
				return usagef("The sub command %s not exist.", args[0])
			}
			a.printCommandList(cmd.OutOrStdout())
			return nil
		},
		Args: cobra.ArbitraryArgs,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(a.env.Stdout)
	root.SetErr(a.env.Stderr)
	pf := root.PersistentFlags()
	pf.StringVarP(&a.namesrvAddr, "namesrvAddr", "n", "", "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876' (default: $NAMESRV_ADDR)")
	pf.StringVar(&a.output, "output", outputText, "output format: text (as the Java tool) or json")
	stringOpt(pf, &a.accessKey, "ak", "accessKey", "access key (ACL 2.0: username) that signs every request (default: from --toolsConfig)")
	stringOpt(pf, &a.secretKey, "sk", "secretKey", "secret key (ACL 2.0: password) of the access key")
	pf.StringVar(&a.toolsConfig, "toolsConfig", "", "YAML file with accessKey and secretKey, as the Java tool's tools.yml (default: $ROCKETMQ_HOME/conf/tools.yml if it exists)")
	pf.BoolVar(&a.useTLS, "tls", false, "connect over TLS (the Java tool's -Dtls.enable=true)")
	pf.StringVar(&a.tlsConfigFile, "tlsConfigFile", tlsconfig.DefaultConfigFile, "with --tls: properties file of tls.client.* and tls.test.mode.enable keys, read when it exists (Java's -Dtls.config.file)")
	root.SetUsageFunc(a.usage)
	root.SetHelpFunc(a.help)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })

	commands := []*cobra.Command{
		newUpdateTopic(a),
		newUpdateTopicList(a),
		newDeleteTopic(a),
		newUpdateSubGroup(a),
		newUpdateSubGroupList(a),
		newSetConsumeMode(a),
		newDeleteSubGroup(a),
		newUpdateBrokerConfig(a),
		newUpdateTopicPerm(a),
		newTopicRoute(a),
		newTopicStatus(a),
		newTopicClusterList(a),
		newBrokerStatus(a),
		newQueryMsgByID(a),
		newQueryMsgByKey(a),
		newQueryMsgByUniqueKey(a),
		newQueryMsgByOffset(a),
		newQueryMsgTraceByID(a),
		newPrintMsg(a),
		newPrintMsgByQueue(a),
		newSendMsgStatus(a),
		newBrokerConsumeStats(a),
		newProducerConnection(a),
		newConsumerConnection(a),
		newConsumerProgress(a),
		newConsumerStatus(a),
		newCloneGroupOffset(a),
		newProducer(a),
		newClusterList(a),
		newTopicList(a),
		newUpdateKvConfig(a),
		newDeleteKvConfig(a),
		newWipeWritePerm(a),
		newAddWritePerm(a),
		newResetOffsetByTime(a),
		newSkipAccumulatedMessage(a),
		newUpdateOrderConf(a),
		newStatsAll(a),
		newAllocateMQ(a),
		newCheckMsgSendRT(a),
		newClusterRT(a),
		newGetNamesrvConfig(a),
		newUpdateNamesrvConfig(a),
		newGetBrokerConfig(a),
		newGetConsumerConfig(a),
		newSendMessage(a),
		newConsumeMessage(a),
		newUpdateStaticTopic(a),
		newRemappingStaticTopic(a),
		newExportMetadata(a),
		newExportConfigs(a),
		newExportMetrics(a),
		newCleanExpiredCQ(a),
		newCleanUnusedTopic(a),
		newDeleteExpiredCommitLog(a),
		newResetMasterFlushOffset(a),
		newSetCommitLogReadAheadMode(a),
		newGetColdDataFlowCtrInfo(a),
		newUpdateColdDataFlowCtrGroupConfig(a),
		newRemoveColdDataFlowCtrGroupConfig(a),
		newExportPopRecord(a),
		newQueryCq(a),
		newStartMonitoring(a),
		newStaticTopicHistory(a),
		newDashboard(a),
	}
	for _, group := range [][]*cobra.Command{controllerCommands(a), authCommands(a), liteCommands(a), popCommands(a)} {
		commands = append(commands, group...)
	}
	for _, c := range commands {
		root.AddCommand(c)
		a.commands = append(a.commands, c)
	}
	return root
}

// printCommandList is the Java tool's output without a sub-command.
func (a *app) printCommandList(w io.Writer) {
	fmt.Fprintf(w, "The most commonly used mqadmin commands are:\n")
	for _, c := range a.commands {
		fmt.Fprintf(w, "   %-35s %s\n", c.Name(), c.Short)
	}
	fmt.Fprintf(w, "\nSee 'mqadmin help <command>' for more information on a specific command.\n")
}

// Main runs mqadmin with args (without the program name) and returns the
// exit code.
func Main(ctx context.Context, args []string, env Env) int {
	env.fill()
	a := &app{env: &env}
	root := newRoot(a)
	root.SetArgs(NormalizeArgs(root, args))
	var (
		cmd *cobra.Command
		err error
	)
	if err = notProvidedCommand(args); err == nil { // its options are not ours to parse
		cmd, err = root.ExecuteContextC(ctx)
	}
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	name := "mqadmin " + cmd.Name()
	if cmd == root {
		name = "mqadmin"
	}
	if errors.Is(err, admin.ErrNoNameServer) {
		err = fmt.Errorf("%w (use -n or set NAMESRV_ADDR)", err)
	}
	var ue *usageError
	var pe *partialError
	switch {
	case errors.As(err, &pe):
		return ExitError
	case errors.As(err, &ue) || !a.ran:
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		if cmd != root {
			fmt.Fprintf(env.Stderr, "%s", cmd.UsageString())
		} else {
			fmt.Fprintf(env.Stderr, "See 'mqadmin help' for the list of commands.\n")
		}
		return ExitUsage
	}
	fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
	return ExitError
}

// runWithClient is run for a body that works with the admin client, which
// is closed afterwards.
func (a *app) runWithClient(f func(cmd *cobra.Command, c *admin.Client) error) func(*cobra.Command, []string) error {
	return a.run(func(cmd *cobra.Command) error {
		return a.withClient(func(c *admin.Client) error { return f(cmd, c) })
	})
}
