// Package credentials signs remoting requests for servers with
// authentication on (ACL 1.0 and the ACL 2.0 auth module): the AccessKey /
// Signature fields of docs/protocol.md §7, as Java's AclClientRPCHook
// (org/apache/rocketmq/acl/common/AclClientRPCHook.java) adds them. The Go
// SDK (pkg/client), the admin client (pkg/admin), mqadmin and mqbench all
// sign through it.
package credentials

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"slices"

	"github.com/rmqgo/rmq/remoting"
)

// extFields keys of the signature (docs/protocol.md §7).
const (
	KeyAccessKey     = "AccessKey"
	KeySignature     = "Signature"
	KeySecurityToken = "SecurityToken"
)

// Credentials are an access key (the ACL 2.0 username) and its secret (the
// user's password), plus an optional security token.
type Credentials struct {
	AccessKey     string
	SecretKey     string
	SecurityToken string // optional; signed, as Java does
}

// ErrIncomplete is returned by Validate when one key is missing.
var ErrIncomplete = errors.New("credentials need both an access key and a secret key")

// Validate reports whether both keys are set.
func (c Credentials) Validate() error {
	if c.AccessKey == "" || c.SecretKey == "" {
		return ErrIncomplete
	}
	return nil
}

// SignRequest adds AccessKey (and SecurityToken when set) to req's
// extFields and then its Signature over every field and the body. Responses
// are left alone.
func (c Credentials) SignRequest(req *remoting.Command) {
	if req.IsResponse() {
		return
	}
	req.SetExt(KeyAccessKey, c.AccessKey)
	if c.SecurityToken != "" {
		req.SetExt(KeySecurityToken, c.SecurityToken)
	}
	delete(req.ExtFields, KeySignature)
	req.SetExt(KeySignature, Sign(req.ExtFields, req.Body, c.SecretKey))
}

// Sign is base64(HMAC-SHA1(secret, the values of ext sorted by key, then
// body)), leaving out the Signature field itself.
func Sign(ext map[string]string, body []byte, secret string) string {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != KeySignature {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	mac := hmac.New(sha1.New, []byte(secret))
	for _, k := range keys {
		mac.Write([]byte(ext[k]))
	}
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Hook is a remoting.RPCHook that signs every request a remoting.Client
// sends with its credentials.
type Hook struct{ Credentials Credentials }

// BeforeRequest signs req.
func (h Hook) BeforeRequest(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	h.Credentials.SignRequest(req)
	return nil
}

// AfterResponse does nothing.
func (Hook) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}
