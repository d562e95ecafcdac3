package auth

import "github.com/rmqgo/rmq/remoting"

// Signer is the client hook that signs the broker's own requests with the
// inner credentials (innerClientAuthenticationCredentials), as Apache's
// BrokerOuterAPI registers an AclClientRPCHook: registration at the
// nameservers and the slave's copy of its master's metadata.
type Signer struct{ cred InnerCredentials }

// NewSigner signs with c; nil when c lacks a key or secret (Apache then
// registers no hook).
func NewSigner(c InnerCredentials) *Signer {
	if c.AccessKey == "" || c.SecretKey == "" {
		return nil
	}
	return &Signer{cred: c}
}

// BeforeRequest adds AccessKey (and SecurityToken) and the Signature over
// every field and the body (docs/protocol.md §7).
func (s *Signer) BeforeRequest(_ *remoting.Channel, req *remoting.Command) *remoting.Command {
	if req.IsResponse() {
		return nil
	}
	req.SetExt(FieldAccessKey, s.cred.AccessKey)
	if s.cred.SecurityToken != "" {
		req.SetExt(FieldSecurityToken, s.cred.SecurityToken)
	}
	delete(req.ExtFields, FieldSignature)
	req.SetExt(FieldSignature, SignRemoting(req.ExtFields, req.Body, s.cred.SecretKey, false, false))
	return nil
}

// AfterResponse does nothing.
func (*Signer) AfterResponse(*remoting.Channel, *remoting.Command, *remoting.Command) {}
