package auth

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Hook is the remoting server hook that authenticates, then authorizes,
// every request (Apache's AuthenticationPipeline and AuthorizationPipeline,
// which run before the processor). The broker registers it only when a
// check is enabled, so requests of a broker without auth pay nothing.
type Hook struct{ svc *Service }

// NewHook wraps the service as a remoting.RPCHook.
func NewHook(svc *Service) *Hook { return &Hook{svc: svc} }

// BeforeRequest answers NO_PERMISSION with Apache's text when a check
// fails; the connection stays open. A send that passes allocates nothing:
// its check is built on the stack and its verdict remembered.
func (h *Hook) BeforeRequest(ch *remoting.Channel, req *remoting.Command) *remoting.Command {
	if req.IsResponse() {
		return nil
	}
	s := h.svc
	user, hasUser := req.ExtFields[FieldAccessKey]
	if s.cfg.AuthenticationEnabled {
		if _, err := s.AuthenticateRemoting(req.Code, req.Version, req.ExtFields, req.Body); err != nil {
			r := Request{Username: user, HasUser: hasUser, SourceIP: hostOf(ch.RemoteAddr()), RPCCode: strconv.Itoa(int(req.Code))}
			s.Audit(r, nil, err)
			return remoting.NewResponse(req, code.NoPermission, err.Error())
		}
	}
	if !s.cfg.AuthorizationEnabled {
		return nil
	}
	var buf [2]Check
	checks, err := appendRemotingChecks(buf[:0], req.Code, req.ExtFields, req.Body, s.cfg.ClusterName)
	if err == nil && len(checks) == 0 {
		return nil
	}
	r := Request{Username: user, HasUser: hasUser, SourceIP: hostOf(ch.RemoteAddr())}
	if len(s.authzWhite) > 0 {
		r.RPCCode = strconv.Itoa(int(req.Code))
	}
	denied := -1
	if err == nil {
		denied, err = s.Authorize(r, checks)
	}
	if err != nil {
		r.RPCCode = strconv.Itoa(int(req.Code))
		var c *Check
		if denied >= 0 {
			c = &checks[denied]
		}
		s.Audit(r, c, err)
		return remoting.NewResponse(req, code.NoPermission, err.Error())
	}
	return nil
}

// AfterResponse does nothing.
func (*Hook) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}

// hostOf is the IP of "ip:port" (Apache's source IP: the remote address
// without the port).
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// InitUsers creates the users the configuration names, as Apache's
// AuthenticationMetadataManagerImpl.initUser: initAuthenticationUser
// (JSON {"username":…,"password":…}) and innerClientAuthenticationCredentials
// (JSON {"accessKey":…,"secretKey":…}) become super users unless a user of
// that name exists.
func (s *Service) InitUsers(initUser, innerCredentials string) error {
	if strings.TrimSpace(initUser) != "" {
		var u struct {
			Username string `json:"username"`
			Password string `json:"password"`
		}
		if err := json.Unmarshal([]byte(initUser), &u); err != nil {
			return fmt.Errorf("auth: Init authentication user error: initAuthenticationUser: %w", err)
		}
		if err := s.ensureSuper(u.Username, u.Password); err != nil {
			return fmt.Errorf("auth: Init authentication user error: %w", err)
		}
	}
	if strings.TrimSpace(innerCredentials) != "" {
		c, err := ParseCredentials(innerCredentials)
		if err != nil {
			return err
		}
		if err := s.ensureSuper(c.AccessKey, c.SecretKey); err != nil {
			return fmt.Errorf("auth: Init inner client authentication credentials error: %w", err)
		}
	}
	return nil
}

func (s *Service) ensureSuper(name, password string) error {
	if _, ok := s.store.User(name); ok {
		return nil
	}
	return s.CreateUser(User{Username: name, Password: password, Type: UserSuper, Status: StatusEnable})
}

// InnerCredentials is SessionCredentials as innerClientAuthenticationCredentials
// holds it.
type InnerCredentials struct {
	AccessKey     string `json:"accessKey"`
	SecretKey     string `json:"secretKey"`
	SecurityToken string `json:"securityToken"`
}

// ParseCredentials reads innerClientAuthenticationCredentials.
func ParseCredentials(s string) (InnerCredentials, error) {
	var c InnerCredentials
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("auth: innerClientAuthenticationCredentials: %w", err)
	}
	return c, nil
}
