package auth

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// GRPCMeta is what the check reads of a gRPC request: the authorization
// and x-mq-date-time metadata and the peer's ip:port.
type GRPCMeta struct {
	Authorization string
	DateTime      string
	RemoteAddr    string
}

// grpcCredentials parses the authorization metadata as Apache's
// DefaultAuthenticationContextBuilder.build(Metadata, …):
// "MQv2-HMAC-SHA1 Credential=AK, SignedHeaders=x-mq-date-time,
// Signature=HEX". No header is no user; the errors are Apache's texts.
func grpcCredentials(md GRPCMeta) (user, signature string, err error) {
	if md.Authorization == "" {
		return "", "", nil
	}
	if md.DateTime == "" {
		return "", "", authError("datetime is null.")
	}
	_, rest, ok := strings.Cut(md.Authorization, " ")
	if !ok {
		return "", "", authError("authentication header is incorrect.")
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return "", "", authError("authentication keyValues length is incorrect, actual length=1.")
		}
		switch k {
		case "Credential":
			parts := javaSplit(v, "/")
			if len(parts) == 0 {
				return "", "", authError("authentication credential length is incorrect, actual length=0.")
			}
			user = parts[0]
		case "Signature":
			b, err := hex.DecodeString(v)
			if err != nil {
				return "", "", authError("create authentication context error.")
			}
			signature = base64.StdEncoding.EncodeToString(b)
		}
	}
	return user, signature, nil
}

// javaSplit is String.split with a literal separator: trailing empty
// strings are dropped.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// CheckGRPC authenticates (the signature over x-mq-date-time) and
// authorizes one gRPC request as Apache's proxy pipeline does, with the
// whitelists naming message types ("apache.rocketmq.v2.QueryRouteRequest").
// A refusal is an *Error (UNAUTHORIZED with its text) and writes the
// audit line.
func (s *Service) CheckGRPC(md GRPCMeta, req proto.Message) error {
	rpcCode := string(req.ProtoReflect().Descriptor().FullName())
	r := Request{SourceIP: hostOf(md.RemoteAddr), RPCCode: rpcCode}
	user, sig, err := grpcCredentials(md)
	r.Username, r.HasUser = user, user != ""
	if s.cfg.AuthenticationEnabled {
		if err == nil && !s.authnWhite[rpcCode] {
			var key *credentials.Key
			if key, err = s.userKey(Credentials{Username: user, Signature: sig}); err == nil && !key.VerifyBytes(sig, md.DateTime) {
				err = authError(msgBadSignature)
			}
		}
		if err != nil {
			s.Audit(r, nil, err)
			return err
		}
	}
	if !s.cfg.AuthorizationEnabled {
		return nil
	}
	checks, err := GRPCChecks(req)
	denied := -1
	if err == nil {
		denied, err = s.Authorize(r, checks)
	}
	if err != nil {
		var c *Check
		if denied >= 0 {
			c = &checks[denied]
		}
		s.Audit(r, c, err)
		return err
	}
	return nil
}

// GRPCChecks maps a gRPC request to Apache 5.5.0's authorization checks
// (DefaultAuthorizationContextBuilder.build(Metadata, GeneratedMessageV3)):
// a request type it does not name (PullMessage among them) has none.
func GRPCChecks(req proto.Message) ([]Check, error) {
	var out []Check
	topic := func(r *v2pb.Resource, acts ...Action) error {
		if r == nil || strings.TrimSpace(r.GetName()) == "" {
			return authError("topic is null.")
		}
		out = append(out, Check{Resource: TopicResource(r.GetName()), Actions: acts})
		return nil
	}
	group := func(r *v2pb.Resource) error {
		if r == nil || strings.TrimSpace(r.GetName()) == "" {
			return authError("group is null.")
		}
		out = append(out, Check{Resource: GroupResource(r.GetName()), Actions: []Action{ActSub}})
		return nil
	}
	sub := func(g, t *v2pb.Resource) error {
		if err := group(g); err != nil {
			return err
		}
		return topic(t, ActSub)
	}
	var err error
	switch m := req.(type) {
	case *v2pb.SendMessageRequest:
		if len(m.GetMessages()) == 0 {
			return nil, authError("message is null.")
		}
		err = topic(m.GetMessages()[0].GetTopic(), ActPub)
	case *v2pb.RecallMessageRequest:
		err = topic(m.GetTopic(), ActPub)
	case *v2pb.EndTransactionRequest:
		err = topic(m.GetTopic(), ActPub)
	case *v2pb.HeartbeatRequest:
		switch m.GetClientType() {
		case v2pb.ClientType_PUSH_CONSUMER, v2pb.ClientType_SIMPLE_CONSUMER, v2pb.ClientType_PULL_CONSUMER:
			err = group(m.GetGroup())
		}
	case *v2pb.ReceiveMessageRequest:
		if m.GetMessageQueue() == nil {
			return nil, authError("messageQueue is null.")
		}
		err = sub(m.GetGroup(), m.GetMessageQueue().GetTopic())
	case *v2pb.SyncLiteSubscriptionRequest:
		if len(m.GetLiteTopicSet()) > 0 {
			err = sub(m.GetGroup(), m.GetTopic())
		}
	case *v2pb.AckMessageRequest:
		err = sub(m.GetGroup(), m.GetTopic())
	case *v2pb.ForwardMessageToDeadLetterQueueRequest:
		err = sub(m.GetGroup(), m.GetTopic())
	case *v2pb.NotifyClientTerminationRequest:
		if strings.TrimSpace(m.GetGroup().GetName()) != "" {
			err = group(m.GetGroup())
		}
	case *v2pb.ChangeInvisibleDurationRequest:
		err = group(m.GetGroup())
	case *v2pb.QueryRouteRequest:
		err = topic(m.GetTopic(), ActPub, ActSub)
	case *v2pb.QueryAssignmentRequest:
		err = sub(m.GetGroup(), m.GetTopic())
	case *v2pb.TelemetryCommand:
		st := m.GetSettings()
		if st == nil {
			return nil, nil
		}
		if st.GetPublishing() == nil && st.GetSubscription() == nil {
			return nil, authError("settings command doesn't have publishing or subscription.")
		}
		if p := st.GetPublishing(); p != nil {
			for _, t := range p.GetTopics() {
				if err = topic(t, ActPub); err != nil {
					return nil, err
				}
			}
		}
		if sb := st.GetSubscription(); sb != nil {
			if err = group(sb.GetGroup()); err != nil {
				return nil, err
			}
			for _, e := range sb.GetSubscriptions() {
				if err = topic(e.GetTopic(), ActSub); err != nil {
					return nil, err
				}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
