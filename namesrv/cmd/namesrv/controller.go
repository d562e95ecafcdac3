package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	pkgconfig "github.com/rmqgo/rmq/pkg/config"

	"github.com/rmqgo/rmq/namesrv/controller"
)

// newControllerCommand is `namesrv controller -c controller.conf`: the HA
// controller alone (Apache's mqcontroller), with the keys of
// docs/operations.md "Running the controller".
func newControllerCommand(ctx context.Context, stdout, stderr io.Writer, environ []string) *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "run only the HA controller (standalone, like Apache's mqcontroller)",
		Long: `Runs the RocketMQ 5 HA controller without a nameserver. It serves brokers
and mqadmin on this node's address in controllerDLegerPeers (raft uses the
same port). Required keys: controllerDLegerGroup, controllerDLegerPeers
(n0-host:port;n1-host:port;...), controllerDLegerSelfId; or, with
controllerType=jRaft, jRaftInitConf, jRaftServerId and jRaftControllerRPCAddr
(requests on their own ports). Environment overrides use the CONTROLLER_
prefix (CONTROLLER_CONTROLLER_STORE_PATH). See docs/operations.md.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(_ *cobra.Command, _ []string) error {
			return runController(ctx, &f, stdout, stderr, environ)
		},
	}
	f.register(cmd, "controller")
	return cmd
}

func runController(ctx context.Context, f *serverFlags, stdout, stderr io.Writer, environ []string) error {
	log, err := newLogger(f.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg, set, unknown, err := controller.LoadKeys(pkgconfig.Source{File: f.configFile, Environ: environ}, homeDir())
	f.warnUnknown(log, unknown)
	if f.printAll {
		fmt.Fprint(stdout, pkgconfig.AnnotatedProperties(&cfg))
		return nil
	}
	if err != nil {
		return err
	}
	warnNoEffect(log, pkgconfig.NoEffectSet(&cfg, set))
	ctrl, err := controller.New(cfg, controller.Deps{}, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "The Controller boot success. address %s, storePath %s\n", ctrl.Addr(), cfg.ControllerStorePath)
	<-ctx.Done()
	log.Info("shutdown requested")
	if err := ctrl.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
