package command

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ACL 2.0 administration (rocketmq-tools org/apache/rocketmq/tools/command/
// auth/*SubCommand.java), in the Java tool's order. With -c, the writes go
// to every master and slave of the cluster and the reads to its masters, as
// there; the broker must be given a super user's credentials (-ak/-sk, or
// tools.yml) when authentication is on.
func authCommands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newCreateUser(a),
		newUpdateUser(a),
		newDeleteUser(a),
		newGetUser(a),
		newListUser(a),
		newCopyUser(a),
		newCreateACL(a),
		newUpdateACL(a),
		newDeleteACL(a),
		newGetACL(a),
		newListACL(a),
		newCopyACL(a),
	}
}

// Java's formats of the user and ACL tables.
const (
	userFormat = "%-16s  %-22s  %-22s  %-22s\n"
	aclFormat  = "%-16s  %-10s  %-22s  %-20s  %-24s  %-10s\n"
)

// authTarget is the -b / -c pair of the auth commands.
type authTarget struct{ broker, cluster string }

func (t *authTarget) register(c *cobra.Command, verb string) {
	fs := c.Flags()
	stringOpt(fs, &t.cluster, "c", "clusterName", verb+" which cluster")
	stringOpt(fs, &t.broker, "b", "brokerAddr", verb+" which broker")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
}

// addrs resolves the target: the -b address, or the addresses of the -c
// cluster (with slaves for writes) in the Java tool's HashSet order.
func (t *authTarget) addrs(ctx context.Context, cmd *cobra.Command, c *admin.Client, slaves bool) ([]string, error) {
	if cmd.Flags().Changed("brokerAddr") {
		return []string{strings.TrimSpace(t.broker)}, nil
	}
	_, addrs, err := clusterAddrs(ctx, c, strings.TrimSpace(t.cluster), slaves)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 && !slaves {
		return nil, fmt.Errorf("there is no broker in cluster")
	}
	return addrs, nil
}

// splitJavaList is StringUtils.split(v, ',') with each item trimmed, as
// the Java tools read -r, -a and -i; an empty value is no list.
func splitJavaList(v string) []string {
	return admin.SplitList(v, ",")
}

// writeEach runs op on every target address and prints "<done> to <addr>
// success." (Java stops at the first failure).
func (a *app) writeEach(cmd *cobra.Command, t *authTarget, done string, op func(ctx context.Context, c *admin.Client, addr string) error) error {
	return a.withClient(func(c *admin.Client) error {
		ctx := cmd.Context()
		addrs, err := t.addrs(ctx, cmd, c, true)
		if err != nil {
			return err
		}
		var ok []string
		for _, addr := range addrs {
			if err := op(ctx, c, addr); err != nil {
				return err
			}
			ok = append(ok, addr)
			if !a.json() {
				fmt.Fprintf(a.env.Stdout, "%s to %s success.\n", done, addr)
			}
		}
		if a.json() {
			if ok == nil {
				ok = []string{}
			}
			return writeJSONField(a.env.Stdout, "brokers", ok)
		}
		return nil
	})
}

// ---- users ----

func newCreateUser(a *app) *cobra.Command {
	var t authTarget
	var username, password, userType string
	c := newCmd("createUser", "Create user to cluster.")
	t.register(c, "create user to")
	fs := c.Flags()
	stringOpt(fs, &username, "u", "username", "the username of user to create.")
	stringOpt(fs, &password, "p", "password", "the password of user to create")
	stringOpt(fs, &userType, "t", "userType", "the userType of user to create")
	markRequired(c, "username", "password")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		u := protocol.UserInfo{Username: strings.TrimSpace(username), Password: strings.TrimSpace(password), UserType: strings.TrimSpace(userType)}
		return a.writeEach(cmd, &t, "create user", func(ctx context.Context, c *admin.Client, addr string) error {
			return c.CreateUser(ctx, addr, u)
		})
	})
	return c
}

func newUpdateUser(a *app) *cobra.Command {
	var t authTarget
	var username, password, userType, userStatus string
	c := newCmd("updateUser", "Update user to cluster.")
	t.register(c, "update user to")
	fs := c.Flags()
	stringOpt(fs, &username, "u", "username", "the username of user to update.")
	stringOpt(fs, &password, "p", "password", "the password of user to update")
	stringOpt(fs, &userType, "t", "userType", "the userType of user to update")
	stringOpt(fs, &userStatus, "s", "userStatus", "the userStatus of user to update")
	markRequired(c, "username")
	c.MarkFlagsOneRequired("password", "userType", "userStatus")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		u := protocol.UserInfo{Username: strings.TrimSpace(username), Password: strings.TrimSpace(password),
			UserType: strings.TrimSpace(userType), UserStatus: strings.TrimSpace(userStatus)}
		return a.writeEach(cmd, &t, "update user", func(ctx context.Context, c *admin.Client, addr string) error {
			return c.UpdateUser(ctx, addr, u)
		})
	})
	return c
}

func newDeleteUser(a *app) *cobra.Command {
	var t authTarget
	var username string
	c := newCmd("deleteUser", "Delete user from cluster.")
	t.register(c, "delete user from")
	stringOpt(c.Flags(), &username, "u", "username", "the username of user to delete.")
	markRequired(c, "username")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		name := strings.TrimSpace(username)
		return a.writeEach(cmd, &t, "delete user", func(ctx context.Context, c *admin.Client, addr string) error {
			return c.DeleteUser(ctx, addr, name)
		})
	})
	return c
}

func printUsers(w io.Writer, users []protocol.UserInfo) {
	fmt.Fprintf(w, userFormat, "#UserName", "#Password", "#UserType", "#UserStatus")
	for _, u := range users {
		fmt.Fprintf(w, userFormat, javaStr(u.Username), javaStr(u.Password), javaStr(u.UserType), javaStr(u.UserStatus))
	}
}

// javaStr is how Java's printf prints a String that may be null.
func javaStr(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

func newGetUser(a *app) *cobra.Command {
	var t authTarget
	var username string
	c := newCmd("getUser", "Get user from cluster.")
	t.register(c, "get user for")
	stringOpt(c.Flags(), &username, "u", "username", "the username of user to get")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		addrs, err := t.addrs(ctx, cmd, c, false)
		if err != nil {
			return err
		}
		// With -c the first master that knows the user answers.
		for _, addr := range addrs {
			u, err := c.GetUser(ctx, addr, strings.TrimSpace(username))
			if err != nil {
				return err
			}
			if u != nil {
				return a.emit(u, func(w io.Writer) { printUsers(w, []protocol.UserInfo{*u}) })
			}
		}
		if a.json() {
			return writeJSON(a.env.Stdout, nil)
		}
		return nil
	})
	return c
}

func newListUser(a *app) *cobra.Command {
	var t authTarget
	var filter string
	c := newCmd("listUser", "List user from cluster.")
	t.register(c, "list user for")
	stringOpt(c.Flags(), &filter, "f", "filter", "the filter to list users")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		addrs, err := t.addrs(ctx, cmd, c, false)
		if err != nil {
			return err
		}
		byBroker := cmd.Flags().Changed("brokerAddr")
		for _, addr := range addrs {
			users, err := c.ListUser(ctx, addr, strings.TrimSpace(filter))
			if err != nil {
				return err
			}
			if len(users) == 0 {
				continue
			}
			// With -c the first master with users answers.
			return a.emit(users, func(w io.Writer) {
				printUsers(w, users)
				if !byBroker {
					fmt.Fprintf(w, "get user from %s success.\n", addr)
				}
			})
		}
		if a.json() {
			return writeJSON(a.env.Stdout, []protocol.UserInfo{})
		}
		return nil
	})
	return c
}

func newCopyUser(a *app) *cobra.Command {
	return newCopyAuth(a, authEntries[protocol.UserInfo]{
		cmd: "copyUser", kind: "user", keyName: "username", keyShort: "u", field: "users",
		key: func(u protocol.UserInfo) string { return u.Username },
		get: (*admin.Client).GetUser,
		list: func(c *admin.Client, ctx context.Context, addr string) ([]protocol.UserInfo, error) {
			return c.ListUser(ctx, addr, "")
		},
		create: (*admin.Client).CreateUser, update: (*admin.Client).UpdateUser,
	})
}

// authEntries is what copyUser and copyAcl differ in: the command's name,
// the entry (a user by its username, an ACL by its subject; the Java
// tools build the description, the options' texts and the messages from
// these words), the short key option, the JSON field of the copied keys,
// and the broker calls that read and write it.
type authEntries[T any] struct {
	cmd             string
	kind, keyName   string // "user" and its key "username"; "acl", "subject"
	keyShort, field string
	key             func(T) string
	get             func(c *admin.Client, ctx context.Context, addr, key string) (*T, error)
	list            func(c *admin.Client, ctx context.Context, addr string) ([]T, error)
	create, update  func(c *admin.Client, ctx context.Context, addr string, v T) error
}

// newCopyAuth is the command of copyUser or copyAcl: -f and -t name the
// brokers, the key option the entries to copy.
func newCopyAuth[T any](a *app, e authEntries[T]) *cobra.Command {
	var from, to, keys string
	c := newCmd(e.cmd, "Copy "+e.kind+" to cluster.")
	fs := c.Flags()
	stringOpt(fs, &from, "f", "fromBroker", "the source broker that the "+e.kind+"s copy from")
	stringOpt(fs, &to, "t", "toBroker", "the target broker that the "+e.kind+"s copy to")
	stringOpt(fs, &keys, e.keyShort, e.keyName+"s", "the "+e.keyName+" list of "+e.kind+" to copy.")
	markRequired(c, "fromBroker", "toBroker")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return copyAuthEntries(a, cmd.Context(), c, from, to, keys, e)
	})
	return c
}

// copyAuthEntries is CopyUsersSubCommand and CopyAclsSubCommand: the
// entries of the comma-separated keys (absent ones skipped), or all of
// them, read from the source broker, each created on the target broker, or
// updated there when it has it already, with a line per entry copied.
func copyAuthEntries[T any](a *app, ctx context.Context, c *admin.Client, from, to, keys string, e authEntries[T]) error {
	src, dst := strings.TrimSpace(from), strings.TrimSpace(to)
	var entries []T
	if list := strings.TrimSpace(keys); list != "" {
		for _, k := range admin.SplitList(list, ",") {
			v, err := e.get(c, ctx, src, k)
			if err != nil {
				return err
			}
			if v != nil {
				entries = append(entries, *v)
			}
		}
	} else {
		var err error
		if entries, err = e.list(c, ctx, src); err != nil {
			return err
		}
	}
	copied := []string{}
	for _, v := range entries {
		key := e.key(v)
		old, err := e.get(c, ctx, dst, key)
		if err != nil {
			return err
		}
		if old == nil {
			err = e.create(c, ctx, dst, v)
		} else {
			err = e.update(c, ctx, dst, v)
		}
		if err != nil {
			return err
		}
		copied = append(copied, key)
		if !a.json() {
			fmt.Fprintf(a.env.Stdout, "copy %s of %s from %s to %s success.\n", e.kind, key, src, dst)
		}
	}
	if a.json() {
		return writeJSONField(a.env.Stdout, e.field, copied)
	}
	return nil
}

// ---- ACLs ----

type aclOpts struct {
	subject, resources, actions, sourceIPs, decision string
}

// info is the AclInfo the -s, -r, -a, -i and -d options describe (Java's
// AclInfo.of).
func (o aclOpts) info() protocol.AclInfo {
	return protocol.NewAclInfo(strings.TrimSpace(o.subject), splitJavaList(o.resources), splitJavaList(o.actions),
		splitJavaList(o.sourceIPs), strings.TrimSpace(o.decision))
}

func newWriteACL(a *app, name, short, verb string, send func(c *admin.Client) func(context.Context, string, protocol.AclInfo) error) *cobra.Command {
	var t authTarget
	var o aclOpts
	c := newCmd(name, short)
	t.register(c, verb+" acl to")
	fs := c.Flags()
	stringOpt(fs, &o.subject, "s", "subject", "the subject of acl to "+verb+".")
	stringOpt(fs, &o.resources, "r", "resources", "the resources of acl to "+verb)
	stringOpt(fs, &o.actions, "a", "actions", "the actions of acl to "+verb)
	stringOpt(fs, &o.sourceIPs, "i", "sourceIp", "the sourceIps of acl to "+verb)
	stringOpt(fs, &o.decision, "d", "decision", "the decision of acl to "+verb)
	markRequired(c, "subject", "resources", "actions", "decision")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		acl := o.info()
		return a.writeEach(cmd, &t, verb+" acl", func(ctx context.Context, c *admin.Client, addr string) error {
			return send(c)(ctx, addr, acl)
		})
	})
	return c
}

func newCreateACL(a *app) *cobra.Command {
	return newWriteACL(a, "createAcl", "Create acl to cluster.", "create",
		func(c *admin.Client) func(context.Context, string, protocol.AclInfo) error { return c.CreateACL })
}

func newUpdateACL(a *app) *cobra.Command {
	return newWriteACL(a, "updateAcl", "Update acl to cluster.", "update",
		func(c *admin.Client) func(context.Context, string, protocol.AclInfo) error { return c.UpdateACL })
}

func newDeleteACL(a *app) *cobra.Command {
	var t authTarget
	var subject, resource string
	c := newCmd("deleteAcl", "Delete acl from cluster.")
	t.register(c, "delete acl from")
	fs := c.Flags()
	stringOpt(fs, &subject, "s", "subject", "the subject of acl to delete.")
	stringOpt(fs, &resource, "r", "resources", "the resources of acl to delete")
	markRequired(c, "subject")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		s, r := strings.TrimSpace(subject), strings.TrimSpace(resource)
		return a.writeEach(cmd, &t, "delete acl", func(ctx context.Context, c *admin.Client, addr string) error {
			return c.DeleteACL(ctx, addr, s, r)
		})
	})
	return c
}

// printACLs is Java's table of ACLs: a header, then a row per policy entry
// (a subject without policies gets one row of blanks).
func printACLs(w io.Writer, acls []protocol.AclInfo) {
	fmt.Fprintf(w, aclFormat, "#Subject", "#PolicyType", "#Resource", "#Actions", "#SourceIp", "#Decision")
	for _, acl := range acls {
		if len(acl.Policies) == 0 {
			fmt.Fprintf(w, aclFormat, javaStr(acl.Subject), "", "", "", "", "")
		}
		for _, p := range acl.Policies {
			for _, e := range p.Entries {
				fmt.Fprintf(w, aclFormat, javaStr(acl.Subject), javaStr(p.PolicyType), javaStr(e.Resource),
					javaList(e.Actions), javaList(e.SourceIps), javaStr(e.Decision))
			}
		}
	}
}

func newGetACL(a *app) *cobra.Command {
	var t authTarget
	var subject string
	c := newCmd("getAcl", "Get acl from cluster.")
	t.register(c, "get acl for")
	stringOpt(c.Flags(), &subject, "s", "subject", "the subject of acl to get")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		addrs, err := t.addrs(ctx, cmd, c, false)
		if err != nil {
			return err
		}
		// With -c every master's ACL is printed, each with its header.
		found := []protocol.AclInfo{}
		for _, addr := range addrs {
			acl, err := c.GetACL(ctx, addr, strings.TrimSpace(subject))
			if err != nil {
				return err
			}
			if acl == nil {
				continue
			}
			found = append(found, *acl)
			if !a.json() {
				printACLs(a.env.Stdout, []protocol.AclInfo{*acl})
			}
		}
		if a.json() {
			return writeJSON(a.env.Stdout, found)
		}
		return nil
	})
	return c
}

func newListACL(a *app) *cobra.Command {
	var t authTarget
	var subject, resource string
	c := newCmd("listAcl", "List acl from cluster.")
	t.register(c, "list acl for")
	fs := c.Flags()
	stringOpt(fs, &subject, "s", "subject", "the subject of acl to filter.")
	stringOpt(fs, &resource, "r", "resource", "the resource of acl to filter.")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		addrs, err := t.addrs(ctx, cmd, c, false)
		if err != nil {
			return err
		}
		// With -c every master's list is printed, each with its header.
		all := []protocol.AclInfo{}
		for _, addr := range addrs {
			acls, err := c.ListACL(ctx, addr, strings.TrimSpace(subject), strings.TrimSpace(resource))
			if err != nil {
				return err
			}
			if len(acls) == 0 {
				continue
			}
			all = append(all, acls...)
			if !a.json() {
				printACLs(a.env.Stdout, acls)
			}
		}
		if a.json() {
			return writeJSON(a.env.Stdout, all)
		}
		return nil
	})
	return c
}

func newCopyACL(a *app) *cobra.Command {
	return newCopyAuth(a, authEntries[protocol.AclInfo]{
		cmd: "copyAcl", kind: "acl", keyName: "subject", keyShort: "s", field: "subjects",
		key: func(acl protocol.AclInfo) string { return acl.Subject },
		get: (*admin.Client).GetACL,
		list: func(c *admin.Client, ctx context.Context, addr string) ([]protocol.AclInfo, error) {
			return c.ListACL(ctx, addr, "", "")
		},
		create: (*admin.Client).CreateACL, update: (*admin.Client).UpdateACL,
	})
}
