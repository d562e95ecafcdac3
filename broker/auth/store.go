package auth

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rmqgo/rmq/broker/internal/jsonfile"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Store holds the users and ACLs. Readers (every authenticated request)
// load an immutable snapshot without locking; writers (admin requests,
// the slave copy) build the next snapshot under a mutex and persist it to
// one JSON file, replaced atomically with a backup (jsonfile.Write), before
// publishing it. Apache keeps the same data in two RocksDB directories
// (auth/…/LocalAuthenticationMetadataProvider.java); the file format is
// ours (docs/auth.md).
type Store struct {
	path string // "" keeps everything in memory (tests)
	log  *slog.Logger

	mu  sync.Mutex
	cur atomic.Pointer[snapshot]
}

type snapshot struct {
	users map[string]*User
	acls  map[string]*ACL // by subject key
	// keys are each user's password keyed once (HMAC-SHA1): a request's
	// check borrows a keyed signer instead of hashing the key again.
	keys map[string]*credentials.Key
	// decisions are the authorization verdicts made on this snapshot.
	decisions *decisionCache
}

// derive fills in what derives from users and ACLs: the keys and an
// empty decision cache.
func (s *snapshot) derive() *snapshot {
	s.keys = make(map[string]*credentials.Key, len(s.users))
	for name, u := range s.users {
		s.keys[name] = credentials.NewKey(u.Password)
	}
	s.decisions = &decisionCache{m: map[decisionKey]verdict{}}
	return s
}

// fileForm is the persisted file: Apache's admin bodies, so the file reads
// like the answers of AUTH_LIST_USER and AUTH_LIST_ACL.
type fileForm struct {
	Users []protocol.UserInfo `json:"users"`
	Acls  []protocol.AclInfo  `json:"acls"`
}

// OpenStore loads path (or its backup); a missing file is an empty store.
func OpenStore(path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: path, log: log}
	snap := &snapshot{users: map[string]*User{}, acls: map[string]*ACL{}}
	if path != "" {
		_, err := jsonfile.Read(path, "auth.json", log, func(b []byte) error {
			var f fileForm
			if err := json.Unmarshal(b, &f); err != nil {
				return err
			}
			next, err := snapshotOf(f.Users, f.Acls)
			if err != nil {
				return err
			}
			snap = next
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("auth: load %s: %w", path, err)
		}
	}
	s.cur.Store(snap.derive())
	return s, nil
}

// snapshotOf converts admin bodies; entries that do not parse are an error
// (the file is ours, a slave copies a master of ours or Apache's).
func snapshotOf(users []protocol.UserInfo, acls []protocol.AclInfo) (*snapshot, error) {
	snap := &snapshot{users: make(map[string]*User, len(users)), acls: make(map[string]*ACL, len(acls))}
	for _, ui := range users {
		u := userOf(ui)
		if u.Username == "" {
			return nil, fmt.Errorf("user without a name")
		}
		if u.Type == "" {
			u.Type = UserNormal
		}
		if u.Status == "" {
			u.Status = StatusEnable
		}
		snap.users[u.Username] = &u
	}
	for _, ai := range acls {
		a, err := aclOf(ai, "")
		if err != nil {
			return nil, err
		}
		snap.acls[a.Subject] = a
	}
	return snap, nil
}

func (s *Store) load() *snapshot { return s.cur.Load() }

// userKey is a user (shared, read only) and its keyed password; ok false
// for an unknown user.
func (s *Store) userKey(name string) (*User, *credentials.Key, bool) {
	snap := s.load()
	u, ok := snap.users[name]
	if !ok {
		return nil, nil, false
	}
	return u, snap.keys[name], true
}

// User returns a user by name.
func (s *Store) User(name string) (User, bool) {
	u, ok := s.load().users[name]
	if !ok {
		return User{}, false
	}
	return *u, true
}

// ACL returns a copy of the ACL of a subject key, or nil.
func (s *Store) ACL(subject string) *ACL {
	a, ok := s.load().acls[subject]
	if !ok {
		return nil
	}
	return cloneACL(a)
}

// Users lists the users whose name contains filter ("" all), by name.
func (s *Store) Users(filter string) []User {
	snap := s.load()
	out := make([]User, 0, len(snap.users))
	for name, u := range snap.users {
		if filter == "" || strings.Contains(name, filter) {
			out = append(out, *u)
		}
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Username, b.Username) })
	return out
}

// ACLs lists copies of the ACLs, by subject key, as Apache's listAcl: a
// subject filter keeps subjects containing it; a resource filter (unless
// the subject key contains it) keeps the entries whose resource key
// contains it, dropping emptied policies and ACLs.
func (s *Store) ACLs(subjectFilter, resourceFilter string) []*ACL {
	snap := s.load()
	keys := make([]string, 0, len(snap.acls))
	for k := range snap.acls {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []*ACL
	for _, k := range keys {
		if strings.TrimSpace(subjectFilter) != "" && !strings.Contains(k, subjectFilter) {
			continue
		}
		a := cloneACL(snap.acls[k])
		if strings.TrimSpace(resourceFilter) != "" && !strings.Contains(k, resourceFilter) {
			kept := a.Policies[:0]
			for _, p := range a.Policies {
				entries := p.Entries[:0]
				for _, e := range p.Entries {
					if strings.Contains(e.Resource.Key(), resourceFilter) {
						entries = append(entries, e)
					}
				}
				p.Entries = entries
				if len(p.Entries) > 0 {
					kept = append(kept, p)
				}
			}
			a.Policies = kept
		}
		if len(a.Policies) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// update runs f on a copy of the current maps (f changes them in place)
// and, if f succeeds, persists and publishes the result.
func (s *Store) update(f func(users map[string]*User, acls map[string]*ACL) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.load()
	users := make(map[string]*User, len(cur.users)+1)
	for k, v := range cur.users {
		users[k] = v
	}
	acls := make(map[string]*ACL, len(cur.acls)+1)
	for k, v := range cur.acls {
		acls[k] = v
	}
	if err := f(users, acls); err != nil {
		return err
	}
	next := (&snapshot{users: users, acls: acls}).derive()
	if err := s.persist(next); err != nil {
		return err
	}
	s.cur.Store(next)
	return nil
}

func (s *Store) persist(snap *snapshot) error {
	if s.path == "" {
		return nil
	}
	f := fileForm{Users: make([]protocol.UserInfo, 0, len(snap.users)), Acls: make([]protocol.AclInfo, 0, len(snap.acls))}
	for _, u := range snap.users {
		f.Users = append(f.Users, userInfo(*u))
	}
	slices.SortFunc(f.Users, func(a, b protocol.UserInfo) int { return strings.Compare(a.Username, b.Username) })
	for _, a := range snap.acls {
		f.Acls = append(f.Acls, aclInfo(a))
	}
	slices.SortFunc(f.Acls, func(a, b protocol.AclInfo) int { return strings.Compare(a.Subject, b.Subject) })
	if err := jsonfile.Write(s.path, f); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}

// PutUser stores u (replacing a user of the same name).
func (s *Store) PutUser(u User) error {
	return s.update(func(users map[string]*User, _ map[string]*ACL) error {
		users[u.Username] = &u
		return nil
	})
}

// ReplaceAll replaces every user and ACL (a slave's copy of its master).
// changed is false when nothing differs, and then nothing is written.
func (s *Store) ReplaceAll(users []protocol.UserInfo, acls []protocol.AclInfo) (changed bool, err error) {
	next, err := snapshotOf(users, acls)
	if err != nil {
		return false, fmt.Errorf("auth: copy: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sameSnapshot(s.load(), next) {
		return false, nil
	}
	next.derive()
	if err := s.persist(next); err != nil {
		return false, err
	}
	s.cur.Store(next)
	return true, nil
}

func sameSnapshot(a, b *snapshot) bool {
	if len(a.users) != len(b.users) || len(a.acls) != len(b.acls) {
		return false
	}
	for k, u := range a.users {
		if o, ok := b.users[k]; !ok || *o != *u {
			return false
		}
	}
	for k, x := range a.acls {
		o, ok := b.acls[k]
		if !ok {
			return false
		}
		xa, _ := json.Marshal(aclInfo(x))
		ob, _ := json.Marshal(aclInfo(o))
		if string(xa) != string(ob) {
			return false
		}
	}
	return true
}

// userOf converts an admin body (UserConverter.convertUser).
func userOf(ui protocol.UserInfo) User {
	return User{Username: ui.Username, Password: ui.Password, Type: ParseUserType(ui.UserType), Status: ParseUserStatus(ui.UserStatus)}
}

func userInfo(u User) protocol.UserInfo {
	return protocol.UserInfo{Username: u.Username, Password: u.Password, UserType: string(u.Type), UserStatus: string(u.Status)}
}

// aclOf converts an admin body as Apache's AclConverter.convertAcl
// followed by the manager's validation; subject is used when the body
// names none. Policies without entries are skipped, unknown actions are
// dropped, a missing policy type is Custom.
func aclOf(ai protocol.AclInfo, subject string) (*ACL, error) {
	subj := ai.Subject
	if subj == "" {
		subj = subject
	}
	name, ok := parseSubject(subj)
	if !ok {
		return nil, authError("The subject type is null.")
	}
	a := &ACL{Subject: SubjectKey(name)}
	for _, pi := range ai.Policies {
		if len(pi.Entries) == 0 {
			continue
		}
		p := Policy{Type: ParsePolicyType(pi.PolicyType)}
		if p.Type == "" {
			p.Type = PolicyCustom
		}
		for _, ei := range pi.Entries {
			r, ok := ParseResource(ei.Resource)
			if !ok {
				return nil, authError("The resource is null.")
			}
			e := Entry{Resource: r, Decision: ParseDecision(ei.Decision)}
			for _, an := range ei.Actions {
				if act := ParseAction(an); act != ActUnknown {
					e.Actions = append(e.Actions, act)
				}
			}
			if len(e.Actions) == 0 {
				return nil, authError("The actions is empty.")
			}
			if slices.Contains(e.Actions, ActAny) {
				return nil, authError("The actions can not be Any.")
			}
			for _, ip := range ei.SourceIps {
				if strings.TrimSpace(ip) == "" {
					return nil, authError("The source ip is empty.")
				}
				if !validSourceIP(ip) {
					return nil, authError("The source ip is invalid.")
				}
			}
			e.SourceIPs = append([]string(nil), ei.SourceIps...)
			if e.Decision == DecisionUnknown {
				return nil, authError("The decision is null or illegal.")
			}
			p.Entries = append(p.Entries, e)
		}
		a.Policies = append(a.Policies, p)
	}
	if len(a.Policies) == 0 {
		return nil, authError("The policies is empty.")
	}
	return a, nil
}

// aclInfo converts to the admin body (AclConverter.convertAcl).
func aclInfo(a *ACL) protocol.AclInfo {
	out := protocol.AclInfo{Subject: a.Subject}
	for _, p := range a.Policies {
		pi := protocol.PolicyInfo{PolicyType: string(p.Type)}
		for _, e := range p.Entries {
			ei := protocol.PolicyEntryInfo{Resource: e.Resource.Key(), Decision: e.Decision.String()}
			for _, act := range e.Actions {
				ei.Actions = append(ei.Actions, act.String())
			}
			if len(e.SourceIPs) > 0 {
				ei.SourceIps = append([]string(nil), e.SourceIPs...)
			}
			pi.Entries = append(pi.Entries, ei)
		}
		out.Policies = append(out.Policies, pi)
	}
	return out
}
