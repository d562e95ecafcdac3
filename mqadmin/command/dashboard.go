package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/dashboard"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- dashboard (ours) ----

type dashboardOpts struct {
	listen         string
	sampleInterval string
	allowedHosts   string
}

func newDashboard(a *app) *cobra.Command {
	var o dashboardOpts
	c := newCmd("dashboard", "Serve the web console (cluster, topics, groups, lite topics, pop, messages, charts) until interrupted.")
	fs := c.Flags()
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address the console listens on (host:port; port 0 picks a free one)")
	fs.StringVar(&o.sampleInterval, "sampleInterval", "10s", "how often the console samples TPS and lag for its charts")
	fs.StringVar(&o.allowedHosts, "allowedHosts", "", "comma-separated DNS names the console may be reached by (IP addresses and localhost always may)")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.dashboard(cmd.Context(), o) })
	return c
}

func (a *app) dashboard(ctx context.Context, o dashboardOpts) error {
	every, err := time.ParseDuration(strings.TrimSpace(o.sampleInterval))
	if err != nil || every <= 0 {
		return usagef("invalid --sampleInterval %q: want a positive duration such as 10s", o.sampleInterval)
	}
	cred, err := a.credentials()
	if err != nil {
		return err
	}
	tc, err := a.tlsConfig()
	if err != nil {
		return err
	}
	ns := a.nameServers()
	if len(ns) == 0 {
		return admin.ErrNoNameServer
	}
	srv, err := dashboard.New(dashboard.Config{
		Dial: func(cr *credentials.Credentials) (*admin.Client, error) {
			return a.env.Dial(admin.Config{NameServers: ns, Credentials: cr, TLS: tc}, a.env.Log)
		},
		Credentials:    cred,
		Log:            a.env.Log,
		Now:            a.env.Now,
		SampleInterval: every,
		MessageAt:      a.messageAt,
		AllowedHosts:   splitNonBlank(o.allowedHosts),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", strings.TrimSpace(o.listen))
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go srv.Run(ctx)
	go func() {
		<-ctx.Done()
		sctx, c := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer c()
		_ = hs.Shutdown(sctx)
	}()
	fmt.Fprintf(a.env.Stdout, "console on http://%s/ (nameserver %s)\n", ln.Addr(), strings.Join(ns, ";"))
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// messageAt is queryMsgByOffset's pull for the console: the message at
// offset of mq, nil when there is none.
func (a *app) messageAt(ctx context.Context, cred *credentials.Credentials, mq protocol.MessageQueue, offset int64) (*message.Message, error) {
	var out *message.Message
	err := withStarted(ctx, a, "pull consumer", func(cc client.CommonConfig) (*client.PullConsumer, error) {
		cc.Credentials = cred
		return client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: cc, Group: toolsConsumerGroup})
	}, func(pc *client.PullConsumer) error {
		res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: offset, MaxNums: 1, Expression: "*"})
		if err != nil {
			return err
		}
		if res.Status == client.PullFound && len(res.Messages) > 0 {
			out = res.Messages[0]
		}
		return nil
	})
	return out, err
}
