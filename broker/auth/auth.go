package auth

import (
	"cmp"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/pkg/credentials"
)

// Error is a refused authentication or authorization (Apache's
// AuthenticationException / AuthorizationException): the request is
// answered NO_PERMISSION (16) with Error() as the remark, or, on the gRPC
// endpoint, UNAUTHORIZED (40100).
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func authError(format string, args ...any) error {
	if len(args) == 0 {
		return &Error{msg: format}
	}
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// The texts Apache answers (DefaultAuthenticationHandler,
// UserAuthorizationHandler, AclAuthorizationHandler and the strategies).
const (
	msgNoUsername      = "username cannot be null."
	msgBadSignature    = "check signature failed."
	msgAuthzFailed     = "Authorization failed. Please verify your access rights and try again."
	msgNoMatchedPolicy = "no matched policies."
	msgDecisionDeny    = "the decision is deny."
)

// Signature fields of a remoting request (docs/protocol.md §7).
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	uniqueKeyQuery     = "_UNIQUE_KEY_QUERY"
	// versionV4_9_3 is MQVersion V4_9_3's ordinal: up to it the signed
	// content leaves _UNIQUE_KEY_QUERY out.
	versionV4_9_3 = 399
)

// Config is what the service reads of the broker's AuthConfig.
type Config struct {
	AuthenticationEnabled bool
	AuthorizationEnabled  bool
	// Whitelists are Apache's comma-separated rpc codes: request codes
	// ("10") on remoting, message names ("apache.rocketmq.v2.QueryRouteRequest")
	// on gRPC, exempt from the check.
	AuthenticationWhitelist string
	AuthorizationWhitelist  string
	// ClusterName names the Cluster resource of cluster-wide requests.
	ClusterName string
}

// Service checks requests against the Store.
type Service struct {
	cfg        Config
	store      *Store
	log        *slog.Logger
	authnWhite map[string]bool
	authzWhite map[string]bool
}

// NewService builds the checker; log receives the audit lines.
func NewService(cfg Config, store *Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, store: store, log: log, authnWhite: splitList(cfg.AuthenticationWhitelist), authzWhite: splitList(cfg.AuthorizationWhitelist)}
}

// splitList is StringUtils.split(s, ",") with each item trimmed.
func splitList(s string) map[string]bool {
	out := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out[item] = true
		}
	}
	return out
}

// Store is the service's user and ACL store.
func (s *Service) Store() *Store { return s.store }

// Config is the service's configuration.
func (s *Service) Config() Config { return s.cfg }

// Enabled reports whether either check is on.
func (s *Service) Enabled() bool { return s.cfg.AuthenticationEnabled || s.cfg.AuthorizationEnabled }

// Credentials are what a request presents: the user, the signature and
// the content it signs.
type Credentials struct {
	Username  string
	Signature string // base64
}

// userKey is DefaultAuthenticationHandler's checks before the signature:
// the user is named, exists and is enabled, and the request carries a
// signature. It returns the user's keyed password.
func (s *Service) userKey(c Credentials) (*credentials.Key, error) {
	if c.Username == "" {
		return nil, authError(msgNoUsername)
	}
	u, key, ok := s.store.userKey(c.Username)
	if !ok {
		return nil, authError("User:%s is not found.", c.Username)
	}
	if u.Status == StatusDisable {
		return nil, authError("User:%s is disabled.", c.Username)
	}
	if c.Signature == "" {
		return nil, authError(msgBadSignature)
	}
	return key, nil
}

// AuthenticateRemoting checks a remoting request's signature (Apache's
// DefaultAuthenticationContextBuilder + DefaultAuthenticationHandler).
// It returns the username the request presents ("" for none). A request
// with a SecurityToken may carry client-go's signature, which leaves the
// token out: that form is tried when the first fails.
func (s *Service) AuthenticateRemoting(reqCode int32, version int32, ext map[string]string, body []byte) (string, error) {
	user, hasUser := ext[FieldAccessKey]
	if len(s.authnWhite) > 0 && s.authnWhite[strconv.Itoa(int(reqCode))] {
		return user, nil
	}
	if !hasUser {
		return "", authError(msgNoUsername)
	}
	sig := ext[FieldSignature]
	key, err := s.userKey(Credentials{Username: user, Signature: sig})
	if err != nil {
		return user, err
	}
	var arr [2]string
	skip := arr[:0]
	if version <= versionV4_9_3 {
		skip = append(skip, uniqueKeyQuery)
	}
	if key.VerifyRequest(sig, ext, body, skip...) {
		return user, nil
	}
	if _, ok := ext[FieldSecurityToken]; ok && key.VerifyRequest(sig, ext, body, append(skip, FieldSecurityToken)...) {
		return user, nil
	}
	return user, authError(msgBadSignature)
}

// SignRemoting is base64(HMAC-SHA1(secret, the values of ext sorted by
// key, Signature left out, ‖ body)) (docs/protocol.md §7). dropUnique
// leaves _UNIQUE_KEY_QUERY out (request versions up to V4_9_3), dropToken
// SecurityToken (how client-go signs).
func SignRemoting(ext map[string]string, body []byte, secret string, dropUnique, dropToken bool) string {
	var arr [2]string
	skip := arr[:0]
	if dropUnique {
		skip = append(skip, uniqueKeyQuery)
	}
	if dropToken {
		skip = append(skip, FieldSecurityToken)
	}
	return credentials.NewKey(secret).SignRequest(ext, body, skip...)
}

// Check is one authorization question: may the subject do one of actions
// on resource (Apache's DefaultAuthorizationContext).
type Check struct {
	Resource Resource
	Actions  []Action
}

// Request is who asks, from where, with which code.
type Request struct {
	Username string
	HasUser  bool   // the request named a user (AccessKey present)
	SourceIP string // without port
	RPCCode  string // request code or gRPC message name (whitelist, audit)
}

// Authorize evaluates each check in order, as Apache's
// UserAuthorizationHandler and AclAuthorizationHandler; the first refusal
// is returned with its index in checks (and logged as an audit line by the
// caller); denied is -1 when every check passes.
func (s *Service) Authorize(r Request, checks []Check) (denied int, err error) {
	if len(checks) == 0 {
		return -1, nil
	}
	if len(s.authzWhite) > 0 && s.authzWhite[r.RPCCode] {
		return -1, nil
	}
	if !r.HasUser {
		return 0, authError(msgAuthzFailed)
	}
	snap := s.store.load()
	u, ok := snap.users[r.Username]
	if !ok {
		return 0, authError("User:%s not found.", r.Username)
	}
	if u.Type == UserSuper {
		return -1, nil
	}
	for i := range checks {
		c := &checks[i]
		switch snap.decide(r.Username, c, r.SourceIP) {
		case verdictNoMatch:
			return i, denyError(SubjectKey(r.Username), c.Resource, r.SourceIP, msgNoMatchedPolicy)
		case verdictDeny:
			return i, denyError(SubjectKey(r.Username), c.Resource, r.SourceIP, msgDecisionDeny)
		}
	}
	return -1, nil
}

// verdict is the outcome of one check of a Normal user.
type verdict uint8

const (
	verdictAllow   verdict = iota
	verdictNoMatch         // no entry matches: "no matched policies."
	verdictDeny            // the deciding entry denies: "the decision is deny."
)

// decisionKey is one check of a Normal user from one address: the
// verdict depends on nothing else but the snapshot's ACLs.
type decisionKey struct {
	user    string
	res     Resource
	actions uint16 // bit per Action (the check passes when an entry grants any)
	ip      string
}

// maxDecisions bounds a snapshot's decision cache; a full cache starts
// over (a client cycling through resources or addresses costs a clear,
// not memory).
const maxDecisions = 4096

// decisionCache remembers the verdicts of one snapshot: a send
// re-authorizes the same (user, topic, action, address) over and over.
// It belongs to the snapshot, so any change of users or ACLs, which
// publishes a new snapshot, takes effect on the next request.
type decisionCache struct {
	mu sync.RWMutex
	m  map[decisionKey]verdict
}

// decide is the verdict of check c for user (a Normal user) from ip,
// evaluated on the snapshot's ACL once and then remembered.
func (s *snapshot) decide(user string, c *Check, ip string) verdict {
	k := decisionKey{user: user, res: c.Resource, ip: ip}
	for _, a := range c.Actions {
		k.actions |= 1 << a
	}
	d := s.decisions
	d.mu.RLock()
	v, ok := d.m[k]
	d.mu.RUnlock()
	if ok {
		return v
	}
	v = verdictNoMatch
	if acl := s.acls[SubjectKey(user)]; acl != nil {
		if e := matchEntry(acl, c, ip); e != nil {
			v = verdictAllow
			if e.Decision == Deny {
				v = verdictDeny
			}
		}
	}
	d.mu.Lock()
	if len(d.m) >= maxDecisions {
		clear(d.m)
	}
	d.m[k] = v
	d.mu.Unlock()
	return v
}

func denyError(subject string, r Resource, ip, detail string) error {
	return authError("%s has no permission to access %s from %s, %s", subject, r.Key(), ip, detail)
}

// matchEntry is AclAuthorizationHandler.matchPolicyEntries: the Custom
// entries matching resource, actions and source IP, or else the Default
// ones, ordered by comparePolicyEntries (a stable sort); the first decides.
// It keeps the first of the least entries instead of sorting them.
func matchEntry(acl *ACL, c *Check, ip string) *Entry {
	for _, t := range [...]PolicyType{PolicyCustom, PolicyDefault} {
		p := acl.policy(t)
		if p == nil {
			continue
		}
		var best *Entry
		for i := range p.Entries {
			e := &p.Entries[i]
			if e.Resource.Match(c.Resource) && e.matchActions(c.Actions) && e.matchIP(ip) {
				if best == nil || compareEntries(e, best) < 0 {
					best = e
				}
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

// compareEntries is Apache 5.5.0's AclAuthorizationHandler.
// comparePolicyEntries: the specific resource first (Any type last; literal
// before prefixed before any; the longer prefix first), then Deny before
// Allow.
func compareEntries(e1, e2 *Entry) int {
	r1, r2 := e1.Resource, e2.Resource
	c := 0
	switch {
	case r1.Type != r2.Type:
		if r1.Type == ResAny {
			c = 1
		}
		if r2.Type == ResAny {
			c = -1
		}
	case r1.Pattern == r2.Pattern:
		if r1.Pattern == PatPrefixed {
			c = -cmp.Compare(len(r1.Name), len(r2.Name))
		}
	default:
		switch {
		case r1.Pattern == PatLiteral:
			c = -1
		case r2.Pattern == PatLiteral:
			c = 1
		case r1.Pattern == PatPrefixed:
			c = -1
		case r2.Pattern == PatPrefixed:
			c = 1
		}
	}
	if c != 0 {
		return c
	}
	if e1.Decision == e2.Decision {
		return 0
	}
	if e1.Decision == Deny {
		return -1
	}
	return 1
}

// Audit writes the one line per refused request the audit requires.
func (s *Service) Audit(r Request, denied *Check, err error) {
	attrs := []any{"user", r.Username, "sourceIp", r.SourceIP, "code", r.RPCCode, "reason", err.Error()}
	if denied != nil {
		acts := make([]string, len(denied.Actions))
		for i, a := range denied.Actions {
			acts[i] = a.String()
		}
		attrs = append(attrs, "resource", denied.Resource.Key(), "actions", strings.Join(acts, ","))
	}
	s.log.Info("auth: request denied", attrs...)
}
