// Package admin is the administration client of RocketMQ nameservers and
// brokers: what mqadmin (and tests, benchmarks, the SDK) use to inspect and
// change clusters. It speaks the remoting protocol (docs/protocol.md §3.2, §3.4)
// and mirrors Apache RocketMQ's DefaultMQAdminExt where that matters to
// callers: which server each request goes to and which codes are errors.
//
// A response with a non-zero code is returned as a *ResponseError; transport
// failures are returned wrapped with the request and address.
package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/internal/failover"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// DefaultTimeout bounds one request, as DefaultMQAdminExt's timeoutMillis.
const DefaultTimeout = 5 * time.Second

// Invoker sends one request and waits for its response: the seam between
// the admin client and the network. *remoting.Client implements it; tests
// may plug in an in-memory fake.
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
}

// Config configures a Client.
type Config struct {
	// NameServers are "host:port" addresses (see ParseNameServers). Calls
	// that need a nameserver fail with ErrNoNameServer when it is empty.
	NameServers []string
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// TLS, when set, connects over TLS (Java mqadmin's -Dtls.enable=true).
	TLS *tls.Config
	// Credentials, when set, sign every request (servers with
	// authentication on; docs/protocol.md §7), whatever the Invoker.
	Credentials *credentials.Credentials
}

// ParseNameServers splits Apache's "a:9876;b:9876" form, trimming blanks
// and dropping empty entries.
func ParseNameServers(s string) []string { return SplitList(s, ";") }

// SplitList splits a list option of the Apache tools ("a;b", "x,y") on
// sep, trimming blanks and dropping empty entries.
func SplitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Client is safe for concurrent use.
type Client struct {
	cfg   Config
	inv   Invoker
	close func() error
	log   *slog.Logger

	// preferred is the index of the nameserver tried first; it moves on
	// when that server cannot be reached, like Java's chosen namesrv.
	preferred atomic.Int32
}

// New returns a client over a new remoting.Client. A nil log discards logs.
func New(cfg Config, log *slog.Logger) (*Client, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	rc := remoting.DefaultClientConfig()
	rc.RequestTimeout = cfg.Timeout
	if rc.ConnectTimeout > cfg.Timeout {
		rc.ConnectTimeout = cfg.Timeout
	}
	rc.TLS = cfg.TLS
	r := remoting.NewClient(rc, log)
	c := newClient(cfg, r, log)
	c.close = r.Close
	return c, nil
}

// NewWithInvoker returns a client that sends through inv (tests, or a
// shared remoting.Client). Close does not close inv.
func NewWithInvoker(cfg Config, inv Invoker, log *slog.Logger) (*Client, error) {
	if inv == nil {
		return nil, errors.New("admin: nil Invoker")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return newClient(cfg, inv, log), nil
}

func newClient(cfg Config, inv Invoker, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, inv: inv, log: log}
}

func (cfg Config) normalize() (Config, error) {
	if cfg.Timeout < 0 {
		return cfg, fmt.Errorf("admin: negative timeout %v", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Credentials != nil {
		if err := cfg.Credentials.Validate(); err != nil {
			return cfg, fmt.Errorf("admin: %w", err)
		}
	}
	var ns []string
	for _, a := range cfg.NameServers {
		ns = append(ns, ParseNameServers(a)...)
	}
	cfg.NameServers = ns
	return cfg, nil
}

// Close releases the connections of a client made by New.
func (c *Client) Close() error {
	if c.close == nil {
		return nil
	}
	return c.close()
}

// NameServers returns the configured nameserver addresses.
func (c *Client) NameServers() []string {
	return append([]string(nil), c.cfg.NameServers...)
}

// Timeout returns the per-request timeout.
func (c *Client) Timeout() time.Duration { return c.cfg.Timeout }

// invoke sends one request to addr and returns the response whatever its
// code; only transport failures are errors.
func (c *Client) invoke(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	if addr == "" {
		return nil, fmt.Errorf("%s: empty address", code.RequestName(reqCode))
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := time.Now()
	req := remoting.NewRequest(reqCode, ext, body)
	if c.cfg.Credentials != nil {
		// Signing adds fields: to a copy, as callers may reuse ext.
		req.ExtFields = maps.Clone(ext)
		c.cfg.Credentials.SignRequest(req)
	}
	resp, err := c.inv.Invoke(ctx, addr, req)
	if err != nil {
		c.log.Debug("admin: request failed", "request", code.RequestName(reqCode), "addr", addr, "err", err)
		return nil, fmt.Errorf("%s to %s: %w", code.RequestName(reqCode), addr, err)
	}
	c.log.Debug("admin: request done", "request", code.RequestName(reqCode), "addr", addr,
		"code", resp.Code, "elapsed", time.Since(start))
	return resp, nil
}

// invokeOK is invoke with a non-zero response code turned into a
// *ResponseError.
func (c *Client) invokeOK(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	resp, err := c.invoke(ctx, addr, reqCode, ext, body)
	if err != nil {
		return nil, err
	}
	if resp.Code != code.Success {
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: reqCode}
	}
	return resp, nil
}

// invokeNamesrv sends to one nameserver: the preferred one, then the next
// ones while they cannot be reached (Java's invokeSync(null, ...)).
func (c *Client) invokeNamesrv(ctx context.Context, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, string, error) {
	ns := c.cfg.NameServers
	if len(ns) == 0 {
		return nil, "", fmt.Errorf("%s: %w", code.RequestName(reqCode), ErrNoNameServer)
	}
	return failover.Invoke(ctx, ns, &c.preferred, func(addr string) (*remoting.Command, error) {
		return c.invoke(ctx, addr, reqCode, ext, body)
	})
}

// invokeNamesrvOK is invokeNamesrv with non-zero codes as *ResponseError.
func (c *Client) invokeNamesrvOK(ctx context.Context, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, string, error) {
	resp, addr, err := c.invokeNamesrv(ctx, reqCode, ext, body)
	if err != nil {
		return nil, addr, err
	}
	if resp.Code != code.Success {
		return nil, addr, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: reqCode}
	}
	return resp, addr, nil
}

// eachNamesrv sends the request to every nameserver, even after failures,
// and returns one result per server in configuration order.
func (c *Client) eachNamesrv(ctx context.Context, reqCode int32, ext map[string]string, body []byte) ([]NamesrvResult, error) {
	if len(c.cfg.NameServers) == 0 {
		return nil, fmt.Errorf("%s: %w", code.RequestName(reqCode), ErrNoNameServer)
	}
	out := make([]NamesrvResult, 0, len(c.cfg.NameServers))
	var errs []error
	for _, addr := range c.cfg.NameServers {
		resp, err := c.invokeOK(ctx, addr, reqCode, ext, body)
		out = append(out, NamesrvResult{Addr: addr, Response: resp, Err: err})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// NamesrvResult is one nameserver's outcome of a request sent to all.
type NamesrvResult struct {
	Addr     string
	Response *remoting.Command // nil when Err != nil
	Err      error
}

// invokeDecode sends a request to addr and decodes the body of its
// successful response into v (nil: the body is not read).
func (c *Client) invokeDecode(ctx context.Context, addr string, reqCode int32, ext map[string]string, v any) error {
	return c.invokeDecodeBody(ctx, addr, reqCode, ext, nil, v)
}

// invokeDecodeBody is invokeDecode of a request with a body.
func (c *Client) invokeDecodeBody(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte, v any) error {
	resp, err := c.invokeOK(ctx, addr, reqCode, ext, body)
	if err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	return decodeBody(resp, addr, reqCode, v)
}

// invokeNamesrvDecode is invokeDecode to the nameservers (invokeNamesrvOK).
func (c *Client) invokeNamesrvDecode(ctx context.Context, reqCode int32, ext map[string]string, v any) error {
	resp, addr, err := c.invokeNamesrvOK(ctx, reqCode, ext, nil)
	if err != nil {
		return err
	}
	return decodeBody(resp, addr, reqCode, v)
}

// decodeFrom sends a request to addr and returns the body of its
// successful response decoded as a T.
func decodeFrom[T any](ctx context.Context, c *Client, addr string, reqCode int32, ext map[string]string) (*T, error) {
	var v T
	if err := c.invokeDecode(ctx, addr, reqCode, ext, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// decodeFromNamesrv is decodeFrom to the nameservers.
func decodeFromNamesrv[T any](ctx context.Context, c *Client, reqCode int32, ext map[string]string) (*T, error) {
	var v T
	if err := c.invokeNamesrvDecode(ctx, reqCode, ext, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// decodeBody decodes a response body in the fastjson dialect.
func decodeBody(resp *remoting.Command, addr string, reqCode int32, v any) error {
	if len(resp.Body) == 0 {
		return fmt.Errorf("%s to %s: response has no body", code.RequestName(reqCode), addr)
	}
	if err := protocol.UnmarshalMQKeyed(resp.Body, v); err != nil {
		return fmt.Errorf("%s to %s: decode body: %w", code.RequestName(reqCode), addr, err)
	}
	return nil
}

// Invoke sends any request to addr through the client's timeout and error
// mapping: a non-zero response code is a *ResponseError. It is the escape
// hatch for requests without a dedicated method.
func (c *Client) Invoke(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	return c.invokeOK(ctx, addr, reqCode, ext, body)
}

// InvokeNamesrv is Invoke to one nameserver (the preferred one, then the
// others while they cannot be reached); it also returns which one answered.
func (c *Client) InvokeNamesrv(ctx context.Context, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, string, error) {
	return c.invokeNamesrvOK(ctx, reqCode, ext, body)
}
