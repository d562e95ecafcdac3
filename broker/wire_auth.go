package broker

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/rmqgo/rmq/broker/auth"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// authFileName is the users and ACLs file in the config directory
// (docs/auth.md).
const authFileName = "auth.json"

// wireAuth opens the user and ACL store, creates the configured initial
// users, migrates ACL 1.0's plain_acl.yml when migrateAuthFromV1Enabled, serves the admin codes 3001–3010 (always, as Apache's
// AdminBrokerProcessor does) and, only when authentication or
// authorization is enabled, hooks the checks into the remoting server: a
// broker without auth runs no hook. With innerClientAuthenticationCredentials
// the broker's own requests (nameserver registration, the slave's copy) are
// signed, as Apache's BrokerOuterAPI does.
func (b *Broker) wireAuth(cfg *config.Config, log *slog.Logger) error {
	alog := log.With("component", "auth")
	st, err := auth.OpenStore(filepath.Join(cfg.ConfigDir(), authFileName), alog)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	svc := auth.NewService(auth.Config{
		AuthenticationEnabled:   cfg.AuthenticationEnabled,
		AuthorizationEnabled:    cfg.AuthorizationEnabled,
		AuthenticationWhitelist: cfg.AuthenticationWhitelist,
		AuthorizationWhitelist:  cfg.AuthorizationWhitelist,
		ClusterName:             cfg.BrokerClusterName,
	}, st, alog)
	if err := svc.InitUsers(cfg.InitAuthenticationUser, cfg.InnerClientAuthenticationCredentials); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if cfg.MigrateAuthFromV1Enabled {
		// Apache migrates at start and goes on whatever failed (logged).
		_ = svc.MigrateV1(cfg.RocketmqHome, alog)
	}
	for c, h := range svc.Handlers() {
		b.RegisterProcessor(c, h, processor.PoolAdmin)
	}
	if svc.Enabled() {
		b.authHook = auth.NewHook(svc)
		b.server.AddHook(b.authHook)
	}
	if cfg.InnerClientAuthenticationCredentials != "" {
		cred, err := auth.ParseCredentials(cfg.InnerClientAuthenticationCredentials)
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		if s := auth.NewSigner(cred); s != nil {
			b.innerSigner = s
			b.client.AddHook(s)
		}
	}
	b.auth = svc
	return nil
}

// signInner adds the inner credentials' signer to a client of the broker's
// own (no-op without credentials).
func (b *Broker) signInner(c *remoting.Client) {
	if b.innerSigner != nil {
		c.AddHook(b.innerSigner)
	}
}

// authCopy is what a slave's copy replaces: the store, keeping the users
// this broker's configuration creates (a master of another configuration
// may lack them).
type authCopy struct{ b *Broker }

func (a authCopy) ReplaceAll(users []protocol.UserInfo, acls []protocol.AclInfo) (bool, error) {
	changed, err := a.b.auth.Store().ReplaceAll(users, acls)
	if err != nil || !changed {
		return changed, err
	}
	cfg := a.b.cfg.Get()
	return true, a.b.auth.InitUsers(cfg.InitAuthenticationUser, cfg.InnerClientAuthenticationCredentials)
}
