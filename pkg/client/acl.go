package client

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"

	"github.com/rmqgo/rmq/remoting"
)

// ACL extFields keys (docs/protocol.md §7).
const (
	aclAccessKey     = "AccessKey"
	aclSignature     = "Signature"
	aclSecurityToken = "SecurityToken"
)

// aclHook signs outgoing requests as Java's AclClientRPCHook does.
type aclHook struct{ cred Credentials }

func (h aclHook) BeforeRequest(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if req.IsResponse() {
		return nil
	}
	req.SetExt(aclAccessKey, h.cred.AccessKey)
	if h.cred.SecurityToken != "" {
		req.SetExt(aclSecurityToken, h.cred.SecurityToken)
	}
	delete(req.ExtFields, aclSignature)
	req.SetExt(aclSignature, sign(req.ExtFields, req.Body, h.cred.SecretKey))
	return nil
}

func (aclHook) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}

// sign is base64(HMAC-SHA1(secret, values sorted by key ‖ body)), skipping
// the Signature field itself.
func sign(ext map[string]string, body []byte, secret string) string {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != aclSignature {
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
