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
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/remoting"
)

// extFields keys of the signature (docs/protocol.md §7).
const (
	KeyAccessKey     = "AccessKey"
	KeySignature     = "Signature"
	KeySecurityToken = "SecurityToken"
)

// SignedFields is how many extFields signing adds at most (AccessKey,
// SecurityToken, Signature): a caller sizing a header map makes room.
const SignedFields = 3

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
	c.signRequest(req, newSigner([]byte(c.SecretKey)))
}

func (c Credentials) signRequest(req *remoting.Command, s *Signer) {
	if req.IsResponse() {
		return
	}
	req.SetExt(KeyAccessKey, c.AccessKey)
	if c.SecurityToken != "" {
		req.SetExt(KeySecurityToken, c.SecurityToken)
	}
	delete(req.ExtFields, KeySignature)
	req.SetExt(KeySignature, string(s.Request(req.ExtFields, req.Body)))
}

// Sign is base64(HMAC-SHA1(secret, the values of ext sorted by key, then
// body)), leaving out the Signature field itself.
func Sign(ext map[string]string, body []byte, secret string) string {
	return string(newSigner([]byte(secret)).Request(ext, body))
}

// field is one extField of a request.
type field struct{ k, v string }

// sigLen is the length of a signature: base64 of a SHA-1 sum.
const sigLen = 28

// maxKept bounds the buffers a Signer keeps between uses: one request with
// huge fields does not pin its memory in a pool.
const maxKept = 64 << 10

// Signer is an HMAC-SHA1 keyed with one secret and the buffers of a
// signature: a Key lends it out so that a signature costs no allocation.
// Not safe for concurrent use.
type Signer struct {
	mac     hash.Hash // keyed; Reset returns it to the keyed state
	fields  []field
	content []byte
	sum     [sha1.Size]byte
	sig     [sigLen]byte
}

func newSigner(secret []byte) *Signer {
	return &Signer{mac: hmac.New(sha1.New, secret)}
}

// Request is base64(HMAC-SHA1(the values of ext sorted by key ‖ body)),
// leaving out Signature and the fields named in skip (the broker checks
// the forms of older clients with it). The result is the Signer's buffer,
// valid until its next use.
func (s *Signer) Request(ext map[string]string, body []byte, skip ...string) []byte {
	fields := s.fields[:0]
	n := 0
	for k, v := range ext {
		if k == KeySignature || slices.Contains(skip, k) {
			continue
		}
		fields = append(fields, field{k, v})
		n += len(v)
	}
	sortFields(fields)
	content := s.content[:0]
	for _, f := range fields {
		content = append(content, f.v...)
	}
	_, _ = s.mac.Write(content)
	_, _ = s.mac.Write(body)
	clear(fields) // the pool keeps no request's strings
	if cap(content) <= maxKept {
		s.fields, s.content = fields, content
	} else {
		s.fields, s.content = nil, nil
	}
	return s.finish()
}

// Bytes is base64(HMAC-SHA1(data)) (the gRPC signature over
// x-mq-date-time), in the Signer's buffer.
func (s *Signer) Bytes(data string) []byte {
	_, _ = io.WriteString(s.mac, data)
	return s.finish()
}

func (s *Signer) finish() []byte {
	base64.StdEncoding.Encode(s.sig[:], s.mac.Sum(s.sum[:0]))
	s.mac.Reset()
	return s.sig[:]
}

// sortFields orders fields by key (byte order, as strings.Compare): an
// insertion sort, cheaper than a general sort for the dozen or two fields
// of a request header.
func sortFields(f []field) {
	if len(f) > 64 {
		slices.SortFunc(f, func(a, b field) int { return strings.Compare(a.k, b.k) })
		return
	}
	for i := 1; i < len(f); i++ {
		x := f[i]
		j := i
		for ; j > 0 && keyLess(x.k, f[j-1].k); j-- {
			f[j] = f[j-1]
		}
		f[j] = x
	}
}

// keyLess is a < b, decided inline by the first bytes when they differ
// (most keys of a request header are one letter).
func keyLess(a, b string) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}

// Key is a secret keyed once: it lends Signers (a keyed HMAC-SHA1 whose
// keyed state is restored by Reset, and buffers) from a pool. Safe for
// concurrent use; the broker keeps one per user, a client one per
// credentials.
type Key struct {
	secret []byte
	pool   sync.Pool
}

// NewKey keys secret.
func NewKey(secret string) *Key {
	k := &Key{secret: []byte(secret)}
	k.pool.New = func() any { return newSigner(k.secret) }
	return k
}

func (k *Key) get() *Signer  { return k.pool.Get().(*Signer) }
func (k *Key) put(s *Signer) { k.pool.Put(s) }

// SignRequest is Signer.Request as a string.
func (k *Key) SignRequest(ext map[string]string, body []byte, skip ...string) string {
	s := k.get()
	sig := string(s.Request(ext, body, skip...))
	k.put(s)
	return sig
}

// VerifyRequest reports, in constant time, whether sig is the signature of
// ext and body with the fields of skip left out.
func (k *Key) VerifyRequest(sig string, ext map[string]string, body []byte, skip ...string) bool {
	s := k.get()
	ok := subtle.ConstantTimeCompare(s.Request(ext, body, skip...), []byte(sig)) == 1
	k.put(s)
	return ok
}

// VerifyBytes reports, in constant time, whether sig is base64(HMAC-SHA1(data)).
func (k *Key) VerifyBytes(sig, data string) bool {
	s := k.get()
	ok := subtle.ConstantTimeCompare(s.Bytes(data), []byte(sig)) == 1
	k.put(s)
	return ok
}

// Hook is a remoting.RPCHook that signs every request a remoting.Client
// sends with its credentials. NewHook's keys the HMAC once and reuses it
// (a Key); a Hook literal keys one per request.
type Hook struct {
	Credentials Credentials
	key         *Key // nil: key per request
}

// NewHook signs with c, keying the HMAC once.
func NewHook(c Credentials) *Hook {
	return &Hook{Credentials: c, key: NewKey(c.SecretKey)}
}

// BeforeRequest signs req.
func (h *Hook) BeforeRequest(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if h.key == nil {
		h.Credentials.SignRequest(req)
		return nil
	}
	s := h.key.get()
	h.Credentials.signRequest(req, s)
	h.key.put(s)
	return nil
}

// AfterResponse does nothing.
func (*Hook) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}
