package grpcserver

import (
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// checkSettings is the proxy's check of a client's Settings on the
// Telemetry stream (Apache proxy/.../grpc/v2/client/ClientActivity.java
// processAndWriteClientSettings and processTelemetryException): a
// producer's topics must be legal, non-system topics, a consumer's group
// a legal, non-system group, and the settings must say which the client
// is. A refusal is not a Status in a command: the proxy ends the stream
// with gRPC INVALID_ARGUMENT, its message naming the check.
func checkSettings(s *v2pb.Settings) error {
	fail := func(msg string) error {
		return grpcstatus.Error(codes.InvalidArgument, "process client telemetryCommand failed. "+msg)
	}
	switch ps := s.GetPubSub().(type) {
	case *v2pb.Settings_Publishing:
		for _, t := range ps.Publishing.GetTopics() {
			if err := checkTopicName(t.GetName()); err != nil {
				return fail(err.Error())
			}
		}
	case *v2pb.Settings_Subscription:
		if st := checkGroupName(ps.Subscription.GetGroup().GetName()); st != nil {
			return fail(st.GetMessage())
		}
	default:
		return grpcstatus.Error(codes.InvalidArgument, "there is no publishing or subscription data in settings")
	}
	return nil
}
