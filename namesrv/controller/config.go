// Package controller is the RocketMQ 5 HA controller on hashicorp/raft
// (docs/replication.md §2): it assigns controller ids to broker replicas,
// keeps each broker set's master, epochs and SyncStateSet in a raft-replicated
// state machine (package state), watches broker heartbeats and elects a new
// master when one dies. Brokers and mqadmin reach it with the remoting
// protocol on its raft peer address (package mux shares the port).
package controller

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	pkgconfig "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/tlsconfig"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
)

// Config is a controller's configuration: its own keys plus the ones it
// shares by name with the nameserver but owns separately (a standalone
// controller reads them from its file; an embedded one takes its defaults,
// since configStorePath and configBlackList of namesrv.conf belong to the
// nameserver).
type Config struct {
	nsconfig.ControllerKeys

	RocketmqHome                string        `key:"rocketmqHome" effect:"none"`
	ConfigStorePath             string        `key:"configStorePath"`
	ConfigBlackList             string        `key:"configBlackList"`
	ScanNotActiveBrokerInterval time.Duration `key:"scanNotActiveBrokerInterval"`
	// BindHost is the interface the DLedger-flavour peer port is bound on
	// (the embedding nameserver's bindAddress); "" binds the peer address
	// itself. Apache's DLedger server binds the peer's port on every
	// interface (NettyServerConfig's bindAddress 0.0.0.0), so a peer
	// address need not be local: behind NAT, or a proxy in front.
	BindHost string

	// Apache's tls.* keys (pkg/tlsconfig): the remoting port takes
	// tls.server.*, notifications to brokers tls.enable / tls.client.*.
	// Raft traffic between controllers stays plaintext.
	tlsconfig.Settings
}

// DefaultConfig returns upstream's defaults (paths are resolved by Resolve).
func DefaultConfig() Config {
	return Config{
		ControllerKeys:              nsconfig.DefaultControllerKeys(),
		ConfigBlackList:             "configBlackList;configStorePath",
		ScanNotActiveBrokerInterval: 5 * time.Second,
		Settings:                    tlsconfig.Defaults(),
	}
}

// Resolve fills the default paths under home: controllerStorePath
// $HOME/DLedgerController, configStorePath $HOME/controller/controller.properties.
func (c *Config) Resolve(home string) {
	if c.ControllerStorePath == "" {
		c.ControllerStorePath = filepath.Join(home, c.ControllerType+"Controller")
	}
	if c.ConfigStorePath == "" {
		c.ConfigStorePath = filepath.Join(home, "controller", "controller.properties")
	}
}

// Validate reports a configuration the controller cannot run with.
func (c *Config) Validate() error {
	errs := []error{c.ControllerKeys.Validate(), c.Settings.Validate()}
	if c.ScanNotActiveBrokerInterval <= 0 {
		errs = append(errs, fmt.Errorf("scanNotActiveBrokerInterval must be positive, got %v", c.ScanNotActiveBrokerInterval))
	}
	if c.ControllerStorePath == "" {
		errs = append(errs, errors.New("controllerStorePath is empty"))
	}
	if c.ConfigStorePath == "" {
		errs = append(errs, errors.New("configStorePath is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("controller config: %w", err)
	}
	return nil
}

// FromNamesrv is the embedded controller's configuration: the controller
// keys of the nameserver's file, the shared scan interval, and home-based
// defaults for the rest.
func FromNamesrv(ns *nsconfig.Config, home string) Config {
	c := DefaultConfig()
	c.ControllerKeys = ns.ControllerKeys
	c.RocketmqHome = ns.RocketmqHome
	c.ScanNotActiveBrokerInterval = ns.ScanNotActiveBrokerInterval
	c.BindHost = ns.BindAddress
	c.Settings = ns.Settings
	c.Resolve(home)
	return c
}

// Load reads a standalone controller's file (plus environment with prefix
// CONTROLLER_ and overrides) over the defaults, resolves and validates it.
// It returns keys that matched nothing.
func Load(src pkgconfig.Source, home string) (Config, []string, error) {
	c, _, unknown, err := LoadKeys(src, home)
	return c, unknown, err
}

// LoadKeys is Load that also returns the keys src sets (canonical
// spelling, sorted); pkgconfig.NoEffectSet picks those that change
// nothing.
func LoadKeys(src pkgconfig.Source, home string) (c Config, set, unknown []string, err error) {
	c = DefaultConfig()
	if src.EnvPrefix == "" {
		src.EnvPrefix = "CONTROLLER"
	}
	set, unknown, err = pkgconfig.LoadSet(&c, src)
	if err != nil {
		return c, set, unknown, fmt.Errorf("controller config: %w", err)
	}
	c.Resolve(home)
	return c, set, unknown, c.Validate()
}

// blackListed reports whether UPDATE_CONTROLLER_CONFIG must refuse key:
// rocketmqHome always, plus configBlackList's entries (case-insensitive,
// as keys are matched when applied).
func (c *Config) blackListed(key string) bool {
	if strings.EqualFold(key, "rocketmqHome") {
		return true
	}
	for k := range strings.SplitSeq(c.ConfigBlackList, ";") {
		if k = strings.TrimSpace(k); k != "" && strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}
