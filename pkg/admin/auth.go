package admin

import (
	"context"
	"fmt"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// ACL 2.0 administration: users and ACLs on one broker (AUTH_* 3001–3010),
// as Java's MQClientAPIImpl sends them. Apache keeps users and ACLs per
// broker; the Java tools with -c send writes to every master and slave of
// the cluster and reads to the masters (ClusterBrokerAddrs).
//
// A broker with authentication on refuses unsigned requests: give the
// client Config.Credentials of a super user (or of a user allowed Update /
// Get on the Cluster resource).

// CreateUser creates a user (3001). An empty UserType makes a Normal user;
// only a super user may create a Super one.
func (c *Client) CreateUser(ctx context.Context, brokerAddr string, u protocol.UserInfo) error {
	return c.sendAuth(ctx, brokerAddr, code.AuthCreateUser, fields(protocol.HdrUsername, u.Username), u)
}

// UpdateUser changes a user's password, type or status (3002); empty
// fields are left as they are.
func (c *Client) UpdateUser(ctx context.Context, brokerAddr string, u protocol.UserInfo) error {
	return c.sendAuth(ctx, brokerAddr, code.AuthUpdateUser, fields(protocol.HdrUsername, u.Username), u)
}

// sendAuth sends a create or update of a user or an ACL: the header
// fields ext name it, v (a UserInfo or an AclInfo) is the JSON body.
func (c *Client) sendAuth(ctx context.Context, brokerAddr string, reqCode int32, ext map[string]string, v any) error {
	body, err := protocol.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: encode body: %w", code.RequestName(reqCode), err)
	}
	_, err = c.invokeOK(ctx, brokerAddr, reqCode, ext, body)
	return err
}

// DeleteUser deletes a user (3003); deleting a user that does not exist
// succeeds.
func (c *Client) DeleteUser(ctx context.Context, brokerAddr, username string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.AuthDeleteUser, fields(protocol.HdrUsername, username), nil)
	return err
}

// GetUser reads a user (3004); nil when the broker has no such user (it
// answers SUCCESS without a body).
func (c *Client) GetUser(ctx context.Context, brokerAddr, username string) (*protocol.UserInfo, error) {
	return optionalBody[*protocol.UserInfo](ctx, c, brokerAddr, code.AuthGetUser, fields(protocol.HdrUsername, username))
}

// ListUser lists the users whose name contains filter ("" for all) (3005);
// none is an empty list.
func (c *Client) ListUser(ctx context.Context, brokerAddr, filter string) ([]protocol.UserInfo, error) {
	return optionalBody[[]protocol.UserInfo](ctx, c, brokerAddr, code.AuthListUser, fields(protocol.HdrFilter, filter))
}

// CreateACL creates a subject's ACL (3006): the policies are added to what
// the subject has (an entry of the same resource is replaced).
func (c *Client) CreateACL(ctx context.Context, brokerAddr string, acl protocol.AclInfo) error {
	return c.sendAuth(ctx, brokerAddr, code.AuthCreateACL, fields(protocol.HdrSubject, acl.Subject), acl)
}

// UpdateACL updates a subject's ACL (3007); the subject must have one.
func (c *Client) UpdateACL(ctx context.Context, brokerAddr string, acl protocol.AclInfo) error {
	return c.sendAuth(ctx, brokerAddr, code.AuthUpdateACL, fields(protocol.HdrSubject, acl.Subject), acl)
}

// DeleteACL deletes a subject's ACL (3008): the entries of resource, or
// with resource "" every policy of the subject.
func (c *Client) DeleteACL(ctx context.Context, brokerAddr, subject, resource string) error {
	ext := fields(protocol.HdrSubject, subject, protocol.HdrResource, resource)
	_, err := c.invokeOK(ctx, brokerAddr, code.AuthDeleteACL, ext, nil)
	return err
}

// GetACL reads a subject's ACL (3009); nil when it has none.
func (c *Client) GetACL(ctx context.Context, brokerAddr, subject string) (*protocol.AclInfo, error) {
	return optionalBody[*protocol.AclInfo](ctx, c, brokerAddr, code.AuthGetACL, fields(protocol.HdrSubject, subject))
}

// ListACL lists the ACLs whose subject contains subjectFilter and that have
// an entry whose resource contains resourceFilter ("" matches all)
// (3010); none is an empty list.
func (c *Client) ListACL(ctx context.Context, brokerAddr, subjectFilter, resourceFilter string) ([]protocol.AclInfo, error) {
	ext := fields(protocol.HdrSubjectFilter, subjectFilter, protocol.HdrResourceFilter, resourceFilter)
	return optionalBody[[]protocol.AclInfo](ctx, c, brokerAddr, code.AuthListACL, ext)
}

// optionalBody is invokeOptionalBody decoding into a V of its own: V's
// zero value (nil) when the answer has no body or on an error.
func optionalBody[V any](ctx context.Context, c *Client, addr string, reqCode int32, ext map[string]string) (V, error) {
	var v V
	if err := c.invokeOptionalBody(ctx, addr, reqCode, ext, &v); err != nil {
		var zero V
		return zero, err
	}
	return v, nil
}

// invokeOptionalBody is invokeDecode for answers whose body may be absent
// (Apache's auth requests answer SUCCESS without a body when nothing is
// found): v is left as it is then.
func (c *Client) invokeOptionalBody(ctx context.Context, addr string, reqCode int32, ext map[string]string, v any) error {
	resp, err := c.invokeOK(ctx, addr, reqCode, ext, nil)
	if err != nil {
		return err
	}
	if len(resp.Body) == 0 {
		return nil
	}
	return decodeBody(resp, addr, reqCode, v)
}

// ClusterBrokerAddrs reads the cluster info (106) and returns the master
// addresses of cluster, with slaves also the slave ones (Java's
// fetchMasterAddrByClusterName and fetchMasterAndSlaveAddrByClusterName),
// ordered by broker name then id.
func (c *Client) ClusterBrokerAddrs(ctx context.Context, cluster string, slaves bool) ([]string, error) {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	if slaves {
		return MasterAndSlaveAddrs(ci, cluster)
	}
	return MasterAddrs(ci, cluster)
}

// fields is a header of key, value pairs without the empty values (Java
// leaves null header fields out).
func fields(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m[kv[i]] = kv[i+1]
		}
	}
	return m
}
