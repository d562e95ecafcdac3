package client_test

import (
	"context"
	"testing"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/remoting"
)

// TestCredentialsSignRequests: a producer with Credentials signs what it
// sends (headers and body) as Java's AclClientRPCHook, in both header
// serializations.
func TestCredentialsSignRequests(t *testing.T) {
	c := startCluster(t, "broker-a")
	c.CreateTopic("T", 1)
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			p := startProducer(t, c, func(cfg *client.ProducerConfig) {
				cfg.SerializeType = st
				cfg.Credentials = &client.Credentials{AccessKey: "alice", SecretKey: "pw-alice"}
			})
			if _, err := p.SendSync(context.Background(), msg("T", "signed body")); err != nil {
				t.Fatal(err)
			}
			sends := c.Brokers[0].Sends()
			s := sends[len(sends)-1]
			if s.Ext[credentials.KeyAccessKey] != "alice" {
				t.Fatalf("AccessKey %q", s.Ext[credentials.KeyAccessKey])
			}
			if got, want := s.Ext[credentials.KeySignature], credentials.Sign(s.Ext, s.Body, "pw-alice"); got != want {
				t.Fatalf("Signature %q, want %q", got, want)
			}
		})
	}
}
