package admintest

import (
	"slices"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Auth fakes the ACL 2.0 administration of the fake's brokers (AUTH_*
// 3001–3010): each broker keeps its own users and ACLs, as Apache's local
// metadata providers do, with the answers of Apache 5.5.0's
// AdminBrokerProcessor and Authentication/AuthorizationMetadataManagerImpl
// for the cases the tools reach (a missing user or ACL, a user that exists
// already). It checks no signature. Install it with AttachAuth; change
// fields under Cluster.Lock once requests flow.
type Auth struct {
	// Users: broker address → username → user.
	Users map[string]map[string]protocol.UserInfo
	// ACLs: broker address → subject → ACL.
	ACLs map[string]map[string]protocol.AclInfo
}

// AttachAuth installs an empty Auth on fc's brokers.
func AttachAuth(fc *Cluster) *Auth {
	a := &Auth{Users: map[string]map[string]protocol.UserInfo{}, ACLs: map[string]map[string]protocol.AclInfo{}}
	fc.addOverride(func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code < code.AuthCreateUser || req.Code > code.AuthListACL || fc.broker(addr) == nil {
			return nil, false
		}
		return a.handle(addr, req), true
	})
	return a
}

// noPermission is how Apache answers an Authentication/AuthorizationException.
func noPermission(req *remoting.Command, msg string) *remoting.Command {
	return fail(req, code.NoPermission, "%s", msg)
}

func (a *Auth) handle(addr string, req *remoting.Command) *remoting.Command {
	if a.Users[addr] == nil {
		a.Users[addr] = map[string]protocol.UserInfo{}
		a.ACLs[addr] = map[string]protocol.AclInfo{}
	}
	users, acls := a.Users[addr], a.ACLs[addr]
	ext := req.ExtFields
	switch req.Code {
	case code.AuthCreateUser, code.AuthUpdateUser:
		name := ext[protocol.HdrUsername]
		if name == "" {
			return fail(req, code.InvalidParameter, "The username is blank")
		}
		var u protocol.UserInfo
		if err := protocol.Unmarshal(req.Body, &u); err != nil {
			return fail(req, code.SystemError, "An system error occurred, please try again later.")
		}
		u.Username = name
		old, exists := users[name]
		if req.Code == code.AuthCreateUser {
			if u.Password == "" {
				return noPermission(req, "password can not be blank")
			}
			if exists {
				return noPermission(req, "The user is existed")
			}
			if u.UserType == "" {
				u.UserType = protocol.UserTypeNormal
			}
			if u.UserStatus == "" {
				u.UserStatus = protocol.UserStatusEnable
			}
			users[name] = canonicalUser(u)
			return ok(req, nil)
		}
		if !exists {
			return noPermission(req, "The user is not exist")
		}
		if u.Password != "" {
			old.Password = u.Password
		}
		if u.UserType != "" {
			old.UserType = u.UserType
		}
		if u.UserStatus != "" {
			old.UserStatus = u.UserStatus
		}
		users[name] = canonicalUser(old)
		return ok(req, nil)
	case code.AuthDeleteUser:
		delete(users, ext[protocol.HdrUsername])
		delete(acls, protocol.SubjectUserPrefix+ext[protocol.HdrUsername])
		return ok(req, nil)
	case code.AuthGetUser:
		if ext[protocol.HdrUsername] == "" {
			return fail(req, code.InvalidParameter, "The username is blank")
		}
		if u, found := users[ext[protocol.HdrUsername]]; found {
			return ok(req, protocol.MustMarshal(u))
		}
		return ok(req, nil)
	case code.AuthListUser:
		var out []protocol.UserInfo
		for _, name := range sortedKeys(users) {
			if f := ext[protocol.HdrFilter]; f == "" || strings.Contains(name, f) {
				out = append(out, users[name])
			}
		}
		if len(out) == 0 {
			return ok(req, nil)
		}
		return ok(req, protocol.MustMarshal(out))
	case code.AuthCreateACL, code.AuthUpdateACL:
		var acl protocol.AclInfo
		if err := protocol.Unmarshal(req.Body, &acl); err != nil || len(acl.Policies) == 0 {
			return fail(req, code.SystemError, "The body of acl is null")
		}
		if acl.Subject == "" {
			acl.Subject = ext[protocol.HdrSubject]
		}
		if !a.subjectExists(users, acl.Subject) {
			return noPermission(req, "The subject of "+acl.Subject+" is not exist.")
		}
		acls[acl.Subject] = mergePolicies(acls[acl.Subject], acl)
		return ok(req, nil)
	case code.AuthDeleteACL:
		subject := ext[protocol.HdrSubject]
		old, found := acls[subject]
		if !a.subjectExists(users, subject) {
			return noPermission(req, "The subject is not exist.")
		}
		if !found {
			return noPermission(req, "The acl is not exist.")
		}
		res := ext[protocol.HdrResource]
		if res == "" {
			delete(acls, subject)
			return ok(req, nil)
		}
		ptype := ext[protocol.HdrPolicyType]
		if ptype == "" {
			ptype = protocol.PolicyTypeCustom
		}
		var kept []protocol.PolicyInfo
		for _, p := range old.Policies {
			if strings.EqualFold(p.PolicyType, ptype) {
				p.Entries = slices.DeleteFunc(slices.Clone(p.Entries), func(e protocol.PolicyEntryInfo) bool { return e.Resource == res })
			}
			if len(p.Entries) > 0 {
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			delete(acls, subject)
		} else {
			old.Policies = kept
			acls[subject] = old
		}
		return ok(req, nil)
	case code.AuthGetACL:
		subject := ext[protocol.HdrSubject]
		if !a.subjectExists(users, subject) {
			return noPermission(req, "The subject is not exist.")
		}
		if acl, found := acls[subject]; found {
			return ok(req, protocol.MustMarshal(acl))
		}
		return ok(req, nil)
	case code.AuthListACL:
		sf, rf := ext[protocol.HdrSubjectFilter], ext[protocol.HdrResourceFilter]
		var out []protocol.AclInfo
		for _, subject := range sortedKeys(acls) {
			if sf != "" && !strings.Contains(subject, sf) {
				continue
			}
			acl := acls[subject]
			var ps []protocol.PolicyInfo
			for _, p := range acl.Policies {
				// Apache's quirk: a subject that contains the resource
				// filter keeps all its entries.
				if rf != "" && !strings.Contains(subject, rf) {
					p.Entries = slices.DeleteFunc(slices.Clone(p.Entries), func(e protocol.PolicyEntryInfo) bool { return !strings.Contains(e.Resource, rf) })
				}
				if len(p.Entries) > 0 {
					ps = append(ps, p)
				}
			}
			if len(ps) > 0 {
				out = append(out, protocol.AclInfo{Subject: subject, Policies: ps})
			}
		}
		if len(out) == 0 {
			return ok(req, nil)
		}
		return ok(req, protocol.MustMarshal(out))
	}
	return nil
}

func (a *Auth) subjectExists(users map[string]protocol.UserInfo, subject string) bool {
	name, isUser := strings.CutPrefix(subject, protocol.SubjectUserPrefix)
	if !isUser {
		return false
	}
	_, found := users[name]
	return found
}

// canonicalUser spells the type and status as the broker stores them.
func canonicalUser(u protocol.UserInfo) protocol.UserInfo {
	for _, n := range []string{protocol.UserTypeSuper, protocol.UserTypeNormal} {
		if strings.EqualFold(u.UserType, n) {
			u.UserType = n
		}
	}
	for _, n := range []string{protocol.UserStatusEnable, protocol.UserStatusDisable} {
		if strings.EqualFold(u.UserStatus, n) {
			u.UserStatus = n
		}
	}
	return u
}

// mergePolicies adds the policies of add to old as Apache's
// Acl.updatePolicy: per policy type, an entry of a resource already there
// replaces it, a new one is appended; policies without a type are Custom.
func mergePolicies(old, add protocol.AclInfo) protocol.AclInfo {
	old.Subject = add.Subject
	for _, p := range add.Policies {
		if p.PolicyType == "" {
			p.PolicyType = protocol.PolicyTypeCustom
		}
		i := slices.IndexFunc(old.Policies, func(q protocol.PolicyInfo) bool { return strings.EqualFold(q.PolicyType, p.PolicyType) })
		if i < 0 {
			old.Policies = append(old.Policies, protocol.PolicyInfo{PolicyType: p.PolicyType})
			i = len(old.Policies) - 1
		}
		entries := slices.Clone(old.Policies[i].Entries)
		for _, e := range p.Entries {
			if j := slices.IndexFunc(entries, func(f protocol.PolicyEntryInfo) bool { return f.Resource == e.Resource }); j >= 0 {
				entries[j] = e
			} else {
				entries = append(entries, e)
			}
		}
		old.Policies[i].Entries = entries
	}
	return old
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
