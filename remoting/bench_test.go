package remoting

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/remoting/code"
)

// sendMessageV2 is a realistic SEND_MESSAGE_V2 request as a Java producer
// sends it: short header names a..n (docs/protocol.md §5.1) and a 1 KiB body.
func sendMessageV2(st SerializeType) *Command {
	req := NewRequest(code.SendMessageV2, map[string]string{
		"a": "please_rename_unique_group_name",
		"b": "TopicTest",
		"c": "TBW102",
		"d": "4",
		"e": "3",
		"f": "0",
		"g": "1733040000123",
		"h": "0",
		"i": "KEYS\x01order-20241201-000042\x02UNIQ_KEY\x017F0000010F2A18B4AAC27C1E5F6D0000\x02CLUSTER\x01DefaultCluster\x02WAIT\x01true\x02TAGS\x01TagA\x02",
		"j": "0",
		"k": "false",
		"l": "16",
		"m": "false",
		"n": "broker-a",
	}, bytes.Repeat([]byte("0123456789abcdef"), 64))
	req.Language = LangJava
	req.Version = 479
	req.Opaque = 123456
	req.SerializeType = st
	return req
}

// BenchmarkCodecSendMessageV2 measures encode + decode of one frame.
func BenchmarkCodecSendMessageV2(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(map[SerializeType]string{SerializeJSON: "json", SerializeRocketMQ: "rocketmq"}[st], func(b *testing.B) {
			cmd := sendMessageV2(st)
			buf, err := AppendFrame(nil, cmd)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf, err = AppendFrame(buf[:0], cmd)
				if err != nil {
					b.Fatal(err)
				}
				out, err := Decode(buf[4:])
				if err != nil || len(out.ExtFields) != 14 {
					b.Fatalf("decode: %v", err)
				}
			}
		})
	}
}

// BenchmarkLoopback measures request/response throughput through Server and
// Client over 127.0.0.1 with a fixed number of requests in flight: over
// netpoll (plain), the goroutine-per-connection path of a permissive server
// (permissive) and TLS.
func BenchmarkLoopback(b *testing.B) {
	fx := newTLSFixture(b)
	serverTLS := ServerTLS{Config: &tls.Config{Certificates: []tls.Certificate{fx.server}}}
	for _, tc := range []struct {
		name   string
		mode   TLSMode
		client *tls.Config
	}{
		{"plain", TLSDisabled, nil},
		{"permissive", TLSPermissive, nil},
		{"tls", TLSEnforcing, &tls.Config{RootCAs: fx.ca.Pool()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := startServer(b, func(c *ServerConfig) {
				c.IdleTimeout = -1
				if tc.mode != TLSDisabled {
					c.TLS = serverTLS
					c.TLS.Mode = tc.mode
				}
			}, nil)
			s.Register(code.SendMessageV2, func(_ context.Context, _ *Channel, req *Command) (*Command, error) {
				resp := NewResponse(req, code.Success, "")
				resp.ExtFields = map[string]string{"msgId": "7F00000100002A9F0000000000001234", "queueId": "3", "queueOffset": "42"}
				return resp, nil
			}, nil)
			c := newClient(b, func(c *ClientConfig) { c.IdleTimeout = -1; c.TLS = tc.client })
			addr := s.Addr()
			mustInvoke(b, c, addr, sendMessageV2(SerializeJSON)) // dial outside the timing

			for _, inflight := range []int{1, 16, 256} {
				b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
					b.ReportAllocs()
					var next atomic.Int64
					var wg sync.WaitGroup
					b.ResetTimer()
					for range inflight {
						wg.Go(func() {
							for next.Add(1) <= int64(b.N) {
								resp, err := c.Invoke(context.Background(), addr, sendMessageV2(SerializeJSON))
								if err != nil || resp.Code != code.Success {
									b.Errorf("invoke: %v %s", err, describe(resp))
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
				})
			}
		})
	}
}
