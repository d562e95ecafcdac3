// Package dashboard is mqadmin's web console: a JSON API over package
// admin (the figures mqadmin's commands print, through
// mqadmin/internal/figures) and a page of plain HTML, CSS and JavaScript
// embedded in the binary (no CDN, no build step: it works offline).
//
// Security: the listener is the caller's (mqadmin binds 127.0.0.1 by
// default); every page gets a session cookie (HttpOnly, SameSite=Strict)
// and a CSRF token that every POST must carry in X-CSRF-Token; the page
// inserts server data as text only, and the Content-Security-Policy
// allows scripts and styles from the console itself only. With ACL on,
// a request the brokers refuse (NO_PERMISSION) answers 401 and the page
// asks for an access key and secret key, kept in the server-side session
// and used to sign that session's requests.
package dashboard

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

//go:embed assets
var assetFS embed.FS

// Config configures a Server.
type Config struct {
	// Dial builds an admin client that signs with cred (nil: unsigned).
	Dial func(cred *credentials.Credentials) (*admin.Client, error)
	// Credentials (mqadmin's -ak/-sk) sign the requests of sessions that
	// gave none, and the sampler's.
	Credentials *credentials.Credentials
	Log         *slog.Logger
	Now         func() time.Time
	// SampleInterval is how often the chart figures are read (0: 10 s);
	// SampleKeep how many samples are kept (0: 360, an hour at 10 s).
	SampleInterval time.Duration
	SampleKeep     int
	// MessageAt reads the message at offset of mq signed with cred
	// (mqadmin: a pull as queryMsgByOffset); nil turns the lookup off.
	MessageAt func(ctx context.Context, cred *credentials.Credentials, mq protocol.MessageQueue, offset int64) (*message.Message, error)
	// AllowedHosts are the DNS names the console may be reached by (the
	// Host header); an IP address and "localhost" always are. Others are
	// refused, so that a web page whose name was rebound to the console's
	// address (DNS rebinding) cannot read it.
	AllowedHosts []string
	// MaxSessions caps the sessions kept; the oldest goes first (0: 64).
	MaxSessions int
}

// Server serves the console. Close releases its clients.
type Server struct {
	cfg  Config
	log  *slog.Logger
	base *admin.Client // signed with cfg.Credentials

	mu       sync.Mutex
	sessions map[string]*session
	order    []string // session ids, oldest first

	samples *sampler
}

type session struct {
	csrf   string
	cred   *credentials.Credentials
	client *admin.Client // nil: the server's base client
}

const (
	cookieName = "rmq_console"
	csrfHeader = "X-CSRF-Token"
)

// New builds a server and dials its base client.
func New(cfg Config) (*Server, error) {
	if cfg.Dial == nil {
		return nil, errors.New("dashboard: nil Dial")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = 10 * time.Second
	}
	if cfg.SampleKeep <= 0 {
		cfg.SampleKeep = 360
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 64
	}
	base, err := cfg.Dial(cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("dashboard: admin client: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Log, base: base, sessions: map[string]*session{}}
	s.samples = newSampler(cfg.SampleKeep)
	return s, nil
}

// Close closes the admin clients.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		if ss.client != nil {
			_ = ss.client.Close()
		}
	}
	s.sessions = map[string]*session{}
	return s.base.Close()
}

// Handler is the console: the page under / and the API under /api/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.FileServerFS(static)
	mux.Handle("GET /", files)
	mux.HandleFunc("GET /api/session", s.api(s.getSession))
	mux.HandleFunc("POST /api/login", s.action(s.login))
	mux.HandleFunc("POST /api/logout", s.action(s.logout))
	mux.HandleFunc("GET /api/cluster", s.api(s.cluster))
	mux.HandleFunc("GET /api/topics", s.api(s.topics))
	mux.HandleFunc("GET /api/topic", s.api(s.topic))
	mux.HandleFunc("GET /api/groups", s.api(s.groups))
	mux.HandleFunc("GET /api/group", s.api(s.group))
	mux.HandleFunc("GET /api/lite", s.api(s.lite))
	mux.HandleFunc("GET /api/liteLag", s.api(s.liteLag))
	mux.HandleFunc("GET /api/pop", s.api(s.pop))
	mux.HandleFunc("GET /api/messages", s.api(s.messages))
	mux.HandleFunc("GET /api/trace", s.api(s.trace))
	mux.HandleFunc("GET /api/metrics", s.api(s.metrics))
	mux.HandleFunc("POST /api/topic", s.action(s.createTopic))
	mux.HandleFunc("POST /api/group", s.action(s.createGroup))
	mux.HandleFunc("POST /api/resetOffset", s.action(s.resetOffset))
	mux.HandleFunc("POST /api/resetOffsetByQueue", s.action(s.resetOffsetByQueue))
	return s.secureHeaders(mux)
}

// hostAllowed reports whether the request's Host is an IP address,
// localhost or one of AllowedHosts.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if _, err := netip.ParseAddr(host); err == nil || strings.EqualFold(host, "localhost") {
		return true
	}
	return slices.ContainsFunc(s.cfg.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) })
}

// secureHeaders: requests by a name not allowed are refused; nothing but
// the console's own files may run or load.
func (s *Server) secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			http.Error(w, "host not allowed: start mqadmin dashboard with --allowedHosts "+r.Host, http.StatusForbidden)
			return
		}
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// sessionOf returns the request's session, starting one (and setting its
// cookie) when the request has none the server knows.
func (s *Server) sessionOf(w http.ResponseWriter, r *http.Request) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, err := r.Cookie(cookieName); err == nil {
		if ss, ok := s.sessions[c.Value]; ok {
			return ss
		}
	}
	if len(s.order) >= s.cfg.MaxSessions {
		old := s.order[0]
		s.order = s.order[1:]
		if ss := s.sessions[old]; ss != nil && ss.client != nil {
			_ = ss.client.Close()
		}
		delete(s.sessions, old)
	}
	id := randomHex(32)
	ss := &session{csrf: randomHex(32)}
	s.sessions[id] = ss
	s.order = append(s.order, id)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return ss
}

// request is what a handler gets: its context, admin client and session.
type request struct {
	*http.Request
	ctx  context.Context
	c    *admin.Client
	sess *session
}

type handlerFunc func(r *request) (any, error)

// httpError is an error with the HTTP status it answers.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) api(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, h) }
}

// action is api for a POST that changes something: it needs the
// session's CSRF token and a JSON body.
func (s *Server) action(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss := s.sessionOf(w, r)
		if tok := r.Header.Get(csrfHeader); tok == "" || tok != ss.csrf {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": "missing or wrong CSRF token: reload the page"})
			return
		}
		s.serve(w, r, h)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, h handlerFunc) {
	ss := s.sessionOf(w, r)
	s.mu.Lock()
	c := ss.client
	s.mu.Unlock()
	if c == nil {
		c = s.base
	}
	v, err := h(&request{Request: r, ctx: r.Context(), c: c, sess: ss})
	if err != nil {
		status, needCred := http.StatusBadGateway, false
		var he *httpError
		switch {
		case errors.As(err, &he):
			status = he.status
		case admin.IsCode(err, code.NoPermission):
			status, needCred = http.StatusUnauthorized, true
		}
		s.log.Debug("dashboard: request failed", "path", r.URL.Path, "err", err)
		writeJSON(w, status, map[string]any{"error": err.Error(), "needCredentials": needCred})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client went away
}

// decodeBody reads a POST's JSON body (at most 64 KiB) into v.
func decodeBody(r *request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("bad JSON body: %v", err)
	}
	return nil
}

// ---- session ----

type sessionInfo struct {
	CSRF      string `json:"csrf"`
	AccessKey string `json:"accessKey"` // "" without credentials of its own
	// ServerSigned says the server signs with mqadmin's -ak/-sk.
	ServerSigned bool     `json:"serverSigned"`
	NameServers  []string `json:"nameServers"`
}

func (s *Server) getSession(r *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := sessionInfo{CSRF: r.sess.csrf, ServerSigned: s.cfg.Credentials != nil, NameServers: s.base.NameServers()}
	if r.sess.cred != nil {
		info.AccessKey = r.sess.cred.AccessKey
	}
	return info, nil
}

func (s *Server) login(r *request) (any, error) {
	var in struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	if err := decodeBody(r, &in); err != nil {
		return nil, err
	}
	cred := &credentials.Credentials{AccessKey: in.AccessKey, SecretKey: in.SecretKey}
	if err := cred.Validate(); err != nil {
		return nil, badRequest("credentials: %v", err)
	}
	c, err := s.cfg.Dial(cred)
	if err != nil {
		return nil, err
	}
	s.setCredentials(r.sess, cred, c)
	return map[string]any{"accessKey": cred.AccessKey}, nil
}

func (s *Server) logout(r *request) (any, error) {
	s.setCredentials(r.sess, nil, nil)
	return map[string]any{}, nil
}

// setCredentials gives a session its keys and the client signing with
// them (nil, nil: back to the server's client), closing the old client.
func (s *Server) setCredentials(ss *session, cred *credentials.Credentials, c *admin.Client) {
	s.mu.Lock()
	old := ss.client
	ss.cred, ss.client = cred, c
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
}
