package auth

import (
	"context"
	"errors"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Handlers serves AUTH_CREATE_USER (3001) … AUTH_LIST_ACL (3010) as
// Apache's AdminBrokerProcessor with AuthenticationMetadataManagerImpl and
// AuthorizationMetadataManagerImpl: a refusal of the managers (user exists,
// subject missing, invalid policy …) is NO_PERMISSION with their text, a
// blank username INVALID_PARAMETER, a request a normal user may not make
// for a super user SYSTEM_ERROR.
func (s *Service) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.AuthCreateUser: s.createUser,
		code.AuthUpdateUser: s.updateUser,
		code.AuthDeleteUser: s.deleteUser,
		code.AuthGetUser:    s.getUser,
		code.AuthListUser:   s.listUser,
		code.AuthCreateACL:  s.putACL,
		code.AuthUpdateACL:  s.putACL,
		code.AuthDeleteACL:  s.deleteACL,
		code.AuthGetACL:     s.getACL,
		code.AuthListACL:    s.listACL,
	}
}

// answer turns a manager error into Apache's answer (handleAuthException).
func answer(req *remoting.Command, err error) *remoting.Command {
	if err == nil {
		return remoting.NewResponse(req, code.Success, "")
	}
	var ae *Error
	if errors.As(err, &ae) {
		return remoting.NewResponse(req, code.NoPermission, ae.Error())
	}
	return remoting.NewResponse(req, code.SystemError, "An system error occurred, please try again later.")
}

// notSuperLogin is isNotSuperUserLogin: a request without AccessKey
// (authentication off) counts as a super user's.
func (s *Service) notSuperLogin(req *remoting.Command) bool {
	ak := req.ExtFields[FieldAccessKey]
	if ak == "" {
		return false
	}
	u, ok := s.store.User(ak)
	return !ok || u.Type != UserSuper
}

func decodeBody[T any](req *remoting.Command, v *T) error {
	if len(req.Body) == 0 {
		return remoting.Errorf(code.SystemError, "request code %d: the request body is empty", req.Code)
	}
	if err := protocol.Unmarshal(req.Body, v); err != nil {
		return remoting.Errorf(code.SystemError, "request code %d: bad body: %v", req.Code, err)
	}
	return nil
}

// requestUser reads the user of AUTH_CREATE_USER and AUTH_UPDATE_USER: the
// name from the header, the rest from the body. A blank name is answered
// (resp not nil).
func requestUser(req *remoting.Command) (u User, resp *remoting.Command, err error) {
	name := req.ExtFields["username"]
	if name == "" {
		return User{}, remoting.NewResponse(req, code.InvalidParameter, "The username is blank"), nil
	}
	var ui protocol.UserInfo
	if err := decodeBody(req, &ui); err != nil {
		return User{}, nil, err
	}
	ui.Username = name
	return userOf(ui), nil, nil
}

func (s *Service) createUser(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	u, resp, err := requestUser(req)
	if resp != nil || err != nil {
		return resp, err
	}
	if u.Type == UserSuper && s.notSuperLogin(req) {
		return remoting.NewResponse(req, code.SystemError, "The super user can only be create by super user"), nil
	}
	return answer(req, s.CreateUser(u)), nil
}

// CreateUser is AuthenticationMetadataManagerImpl.createUser.
func (s *Service) CreateUser(u User) error {
	if strings.TrimSpace(u.Username) == "" {
		return authError("username can not be blank")
	}
	if strings.TrimSpace(u.Password) == "" {
		return authError("password can not be blank")
	}
	if u.Type == "" {
		u.Type = UserNormal
	}
	if u.Status == "" {
		u.Status = StatusEnable
	}
	return s.store.update(func(users map[string]*User, _ map[string]*ACL) error {
		if _, ok := users[u.Username]; ok {
			return authError("The user is existed")
		}
		users[u.Username] = &u
		return nil
	})
}

func (s *Service) updateUser(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	u, resp, err := requestUser(req)
	if resp != nil || err != nil {
		return resp, err
	}
	name := u.Username
	notSuper := s.notSuperLogin(req)
	if u.Type == UserSuper && notSuper {
		return remoting.NewResponse(req, code.SystemError, "The super user can only be update by super user"), nil
	}
	err = s.store.update(func(users map[string]*User, _ map[string]*ACL) error {
		old, ok := users[name]
		if !ok {
			return authError("The user is not exist")
		}
		if old.Type == UserSuper && notSuper {
			return authError("The super user can only be update by super user")
		}
		next := *old
		if strings.TrimSpace(u.Password) != "" {
			next.Password = u.Password
		}
		if u.Type != "" {
			next.Type = u.Type
		}
		if u.Status != "" {
			next.Status = u.Status
		}
		users[name] = &next
		return nil
	})
	return answer(req, err), nil
}

func (s *Service) deleteUser(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.ExtFields["username"]
	if strings.TrimSpace(name) == "" {
		return answer(req, authError("username can not be blank")), nil
	}
	notSuper := s.notSuperLogin(req)
	err := s.store.update(func(users map[string]*User, acls map[string]*ACL) error {
		old, ok := users[name]
		if !ok {
			return errNothing
		}
		if old.Type == UserSuper && notSuper {
			return authError("The super user can only be update by super user")
		}
		delete(users, name)
		delete(acls, SubjectKey(name))
		return nil
	})
	if errors.Is(err, errNothing) {
		err = nil
	}
	return answer(req, err), nil
}

// errNothing ends an update that has nothing to change.
var errNothing = errors.New("nothing to change")

func (s *Service) getUser(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.ExtFields["username"]
	if strings.TrimSpace(name) == "" {
		return remoting.NewResponse(req, code.InvalidParameter, "The username is blank"), nil
	}
	resp := remoting.NewResponse(req, code.Success, "")
	if u, ok := s.store.User(name); ok {
		resp.Body = protocol.MustMarshal(userInfo(u))
	}
	return resp, nil
}

func (s *Service) listUser(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return listAnswer(req, s.store.Users(strings.TrimSpace(req.ExtFields["filter"])), userInfo), nil
}

// listAnswer answers a list request with the wire form of each item; no
// body when there are none.
func listAnswer[T, W any](req *remoting.Command, items []T, wire func(T) W) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	if len(items) > 0 {
		out := make([]W, len(items))
		for i, it := range items {
			out[i] = wire(it)
		}
		resp.Body = protocol.MustMarshal(out)
	}
	return resp
}

// putACL serves AUTH_CREATE_ACL and AUTH_UPDATE_ACL, which Apache's
// manager implements alike: the entries are merged into the subject's ACL
// (an entry of the same resource replaced).
func (s *Service) putACL(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var ai protocol.AclInfo
	if err := decodeBody(req, &ai); err != nil {
		return nil, err
	}
	if len(ai.Policies) == 0 {
		return nil, remoting.Errorf(code.SystemError, "The body of acl is null")
	}
	a, err := aclOf(ai, req.ExtFields["subject"])
	if err != nil {
		return answer(req, err), nil
	}
	return answer(req, s.PutACL(a)), nil
}

// PutACL is AuthorizationMetadataManagerImpl.createAcl / updateAcl.
func (s *Service) PutACL(a *ACL) error {
	name, _ := parseSubject(a.Subject)
	return s.store.update(func(users map[string]*User, acls map[string]*ACL) error {
		if _, ok := users[name]; !ok {
			return authError("The subject of %s is not exist.", a.Subject)
		}
		old, ok := acls[a.Subject]
		if !ok {
			acls[a.Subject] = cloneACL(a)
			return nil
		}
		next := cloneACL(old)
		next.merge(a.Policies)
		acls[a.Subject] = next
		return nil
	})
}

func (s *Service) deleteACL(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name, ok := parseSubject(req.ExtFields["subject"])
	if !ok {
		return answer(req, authError("The subject is null.")), nil
	}
	pt := ParsePolicyType(req.ExtFields["policyType"])
	if pt == "" {
		pt = PolicyCustom
	}
	res, hasRes := ParseResource(req.ExtFields["resource"])
	subject := SubjectKey(name)
	err := s.store.update(func(users map[string]*User, acls map[string]*ACL) error {
		if _, ok := users[name]; !ok {
			return authError("The subject is not exist.")
		}
		old, ok := acls[subject]
		if !ok {
			return authError("The acl is not exist.")
		}
		next := cloneACL(old)
		if hasRes {
			next.deleteEntry(pt, res)
		}
		if !hasRes || len(next.Policies) == 0 {
			delete(acls, subject)
			return nil
		}
		acls[subject] = next
		return nil
	})
	return answer(req, err), nil
}

func (s *Service) getACL(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name, ok := parseSubject(req.ExtFields["subject"])
	if !ok {
		return answer(req, errors.New("bad subject")), nil
	}
	if _, ok := s.store.User(name); !ok {
		return answer(req, authError("The subject is not exist.")), nil
	}
	resp := remoting.NewResponse(req, code.Success, "")
	if a := s.store.ACL(SubjectKey(name)); a != nil {
		resp.Body = protocol.MustMarshal(aclInfo(a))
	}
	return resp, nil
}

func (s *Service) listACL(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return listAnswer(req, s.store.ACLs(req.ExtFields["subjectFilter"], req.ExtFields["resourceFilter"]), aclInfo), nil
}
