package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/rmqgo/rmq/internal/fsutil"
	pkgconfig "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Config returns the live configuration (read-only).
func (c *Controller) Config() *Config { return c.cfg.Load() }

// getConfig (1010): this node's configuration as properties text.
func (c *Controller) getConfig(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = []byte(pkgconfig.Properties(c.cfg.Load()))
	return resp, nil
}

// updateConfig (1009): per node, takes effect at once (e.g.
// enableElectUncleanMaster for the next election) and is persisted to
// configStorePath. Black-listed keys are refused with NO_PERMISSION.
func (c *Controller) updateConfig(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	props, err := pkgconfig.ParseProperties(req.Body)
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, "bad properties body: "+err.Error()), nil
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	next := *c.cfg.Load()
	keys := slices.Sorted(maps.Keys(props))
	for _, k := range keys {
		if next.blackListed(k) {
			return remoting.NewResponse(req, code.NoPermission, fmt.Sprintf("Can not update config in black list: %s", k)), nil
		}
		if !pkgconfig.Has(&next, k) {
			return remoting.NewResponse(req, code.SystemError, "unknown controller config key "+k), nil
		}
		if err := pkgconfig.Set(&next, k, props[k]); err != nil {
			return remoting.NewResponse(req, code.SystemError, err.Error()), nil
		}
	}
	if err := next.Validate(); err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	if err := fsutil.WriteFileAtomic(next.ConfigStorePath, []byte(pkgconfig.Properties(&next)), false); err != nil {
		return remoting.NewResponse(req, code.SystemError, fmt.Sprintf("persist %s: %v", next.ConfigStorePath, err)), nil
	}
	c.cfg.Store(&next)
	c.log.Info("controller: config updated", "keys", keys)
	return remoting.NewResponse(req, code.Success, ""), nil
}
