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
	"hash"
	"slices"
	"strings"

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
	c.signRequest(req, hmac.New(sha1.New, []byte(c.SecretKey)))
}

func (c Credentials) signRequest(req *remoting.Command, mac hash.Hash) {
	if req.IsResponse() {
		return
	}
	req.SetExt(KeyAccessKey, c.AccessKey)
	if c.SecurityToken != "" {
		req.SetExt(KeySecurityToken, c.SecurityToken)
	}
	delete(req.ExtFields, KeySignature)
	req.SetExt(KeySignature, SignWith(mac, req.ExtFields, req.Body))
}

// Sign is base64(HMAC-SHA1(secret, the values of ext sorted by key, then
// body)), leaving out the Signature field itself.
func Sign(ext map[string]string, body []byte, secret string) string {
	return SignWith(hmac.New(sha1.New, []byte(secret)), ext, body)
}

// field is one extField of a request.
type field struct{ k, v string }

// SignWith is Sign with mac, a fresh HMAC-SHA1 keyed with the secret,
// leaving out the fields named in skip as well as Signature (the broker
// checks the forms of older clients with it). The values are gathered in
// one buffer and written at once; up to 48 fields sort on the stack.
func SignWith(mac hash.Hash, ext map[string]string, body []byte, skip ...string) string {
	var arr [48]field
	fields := arr[:0]
	n := 0
	for k, v := range ext {
		if k == KeySignature || slices.Contains(skip, k) {
			continue
		}
		fields = append(fields, field{k, v})
		n += len(v)
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.k, b.k) })
	content := make([]byte, 0, n)
	for _, f := range fields {
		content = append(content, f.v...)
	}
	_, _ = mac.Write(content)
	_, _ = mac.Write(body)
	var sum [sha1.Size]byte
	return base64.StdEncoding.EncodeToString(mac.Sum(sum[:0]))
}

// Hook is a remoting.RPCHook that signs every request a remoting.Client
// sends with its credentials. NewHook's keeps the keyed HMAC and copies it
// for each request; a Hook literal keys one per request.
type Hook struct {
	Credentials Credentials
	keyed       hash.Hash // nil: key per request
}

// NewHook signs with c, keying the HMAC once.
func NewHook(c Credentials) *Hook {
	return &Hook{Credentials: c, keyed: hmac.New(sha1.New, []byte(c.SecretKey))}
}

// BeforeRequest signs req.
func (h *Hook) BeforeRequest(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if h.keyed != nil {
		if cl, ok := h.keyed.(hash.Cloner); ok {
			if mac, err := cl.Clone(); err == nil {
				h.Credentials.signRequest(req, mac)
				return nil
			}
		}
	}
	h.Credentials.SignRequest(req)
	return nil
}

// AfterResponse does nothing.
func (*Hook) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}
