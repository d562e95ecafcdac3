package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// plainAccount is one account of ACL 1.0's plain_acl.yml (Apache
// auth/migration/v1/PlainAccessConfig.java).
type plainAccount struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

type plainFile struct {
	Accounts []plainAccount `yaml:"accounts"`
}

// v1Files are the ACL 1.0 files Apache's PlainPermissionManager reads:
// every .yml/.yaml under $ROCKETMQ_HOME/conf/acl, then
// $ROCKETMQ_HOME/conf/plain_acl.yml.
func v1Files(home string) []string {
	var out []string
	dir := filepath.Join(home, "conf", "acl")
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a missing or unreadable directory has no files
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
			out = append(out, path)
		}
		return nil
	})
	main := filepath.Join(home, "conf", "plain_acl.yml")
	if _, err := os.Stat(main); err == nil && !slices.Contains(out, main) {
		out = append(out, main)
	}
	return out
}

// MigrateV1 is Apache's AuthMigrator (migrateAuthFromV1Enabled): each
// account of the ACL 1.0 files under home becomes a user (admin: Super)
// with an ACL of its topicPerms and groupPerms (Custom policy) and its
// defaultTopicPerm and defaultGroupPerm (Default policy on Topic:* and
// Group:*), unless a user of that name exists. A file that does not parse
// is skipped, an account that fails is logged and the others go on, as in
// Apache. whiteRemoteAddress and globalWhiteRemoteAddresses are not
// migrated (Apache drops them too).
func (s *Service) MigrateV1(home string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	var errs []error
	for _, path := range v1Files(home) {
		b, err := os.ReadFile(path)
		if err != nil {
			log.Warn("ACL 1.0 file unreadable, not migrated", "file", path, "err", err)
			continue
		}
		var f plainFile
		if err := yaml.Unmarshal(b, &f); err != nil {
			log.Warn("ACL 1.0 file does not parse, not migrated", "file", path, "err", err)
			continue
		}
		for _, a := range f.Accounts {
			if seen[a.AccessKey] {
				continue
			}
			seen[a.AccessKey] = true
			if err := s.migrateAccount(a); err != nil {
				log.Error("[ACL MIGRATE] migrating an ACL 1.0 account failed", "accessKey", a.AccessKey, "file", path, "err", err)
				errs = append(errs, fmt.Errorf("account %s: %w", a.AccessKey, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Service) migrateAccount(a plainAccount) error {
	if _, ok := s.store.User(a.AccessKey); ok {
		return nil
	}
	u := User{Username: a.AccessKey, Password: a.SecretKey, Type: UserNormal}
	if a.Admin {
		u.Type = UserSuper
	}
	if err := s.CreateUser(u); err != nil {
		return err
	}
	acl := &ACL{Subject: SubjectKey(a.AccessKey)}
	var custom, def []Entry
	for _, perms := range []struct {
		list  []string
		group bool
	}{{a.TopicPerms, false}, {a.GroupPerms, true}} {
		for _, tp := range perms.list {
			kv := splitNonEmpty(tp, "=")
			if len(kv) != 2 {
				continue
			}
			name, perm := strings.TrimSpace(kv[0]), strings.TrimSpace(kv[1])
			r := TopicResource(name)
			if perms.group {
				r = GroupResource(name)
			}
			custom = append(custom, v1Entry(r, perm))
		}
	}
	if p := strings.TrimSpace(a.DefaultTopicPerm); p != "" {
		def = append(def, v1Entry(Resource{Type: ResTopic, Pattern: PatAny}, p))
	}
	if p := strings.TrimSpace(a.DefaultGroupPerm); p != "" {
		def = append(def, v1Entry(Resource{Type: ResGroup, Pattern: PatAny}, p))
	}
	if len(custom) > 0 {
		acl.Policies = append(acl.Policies, Policy{Type: PolicyCustom, Entries: custom})
	}
	if len(def) > 0 {
		acl.Policies = append(acl.Policies, Policy{Type: PolicyDefault, Entries: def})
	}
	if len(acl.Policies) == 0 {
		return nil
	}
	return s.PutACL(acl)
}

// v1Entry is AuthMigrator.parseActions / parseDecision of an ACL 1.0
// permission: PUB, SUB, PUB|SUB (SUB|PUB) allow those actions, DENY denies
// all, anything else allows all.
func v1Entry(r Resource, perm string) Entry {
	e := Entry{Resource: r, Decision: Allow}
	switch perm {
	case "PUB":
		e.Actions = []Action{ActPub}
	case "SUB":
		e.Actions = []Action{ActSub}
	case "PUB|SUB", "SUB|PUB":
		e.Actions = []Action{ActPub, ActSub}
	case "DENY":
		e.Actions, e.Decision = []Action{ActAll}, Deny
	default:
		e.Actions = []Action{ActAll}
	}
	return e
}
