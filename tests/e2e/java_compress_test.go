package e2e

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestJavaCompressionTypes: the Java client 5.5.0 compresses bodies over
// 4 KiB with LZ4 or ZSTD when told (rocketmq.message.compressType; sysFlag
// compression type bits 8–10). The broker stores them as sent; our Go
// SDK's pulls return them decompressed (each body's CRC32 and length are
// what the producer put in its check properties), the Java consumer reads
// them, the 5.x Java SimpleConsumer receives the same bodies over gRPC
// (which the broker decompresses, as Apache's proxy), and our mqadmin
// printMsg shows the same bodies as Java's.
func TestJavaCompressionTypes(t *testing.T) {
	skipShort(t, "a Java client")
	t.Parallel()
	c, endpoint := startGrpcCluster(t, map[string]string{
		"minInvisibleTimeMillsForRecv": "1000", "grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	})
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}}, Group: "compress_reader"})
	pc = started(t, pc, err)
	defer pc.Shutdown(context.Background())
	for typ, bits := range map[string]int32{"LZ4": message.CompressionLZ4, "ZSTD": message.CompressionZSTD} {
		t.Run(typ, func(t *testing.T) {
			topic := "JavaCompress" + typ
			const n = 6
			res := interop.RunJavaCheckEnv(t, []string{"RMQ_JAVA_OPTS=-Drocketmq.message.compressType=" + typ},
				"roundtrip", "-n", c.NamesrvAddr(), "-t", topic, "-count", strconv.Itoa(n), "-sizes", "8192,65536")
			res.RequireOK(t)

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got := 0
			bodyOf := map[string]string{} // UNIQ_KEY → body
			for q := range 4 {
				mq := protocol.MessageQueue{Topic: topic, BrokerName: c.Brokers()[0].Name(), QueueID: q}
				end, err := pc.GetMaxOffset(ctx, mq)
				if err != nil {
					t.Fatal(err)
				}
				for off := int64(0); off < end; {
					r, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
					if err != nil {
						t.Fatalf("pull %v at %d: %v", mq, off, err)
					}
					for _, m := range r.Messages {
						got++
						// The SDK clears the compressed bit once it inflated
						// the body; the type bits stay.
						if message.CompressionType(m.SysFlag) != bits {
							t.Fatalf("%s stored with sysFlag %#x, want compression type %#x", m.UniqKey(), m.SysFlag, bits)
						}
						if crc := strconv.FormatUint(uint64(crc32.ChecksumIEEE(m.Body)), 10); crc != m.Properties["check_crc"] || strconv.Itoa(len(m.Body)) != m.Properties["check_len"] {
							t.Fatalf("%s body: %d bytes, crc %s; the producer sent %s bytes, crc %s", m.UniqKey(), len(m.Body), crc, m.Properties["check_len"], m.Properties["check_crc"])
						}
						bodyOf[m.UniqKey()] = string(m.Body)
					}
					off = r.NextBeginOffset
				}
			}
			if got != n {
				t.Fatalf("pulled %d of %d", got, n)
			}

			// Everything acked; a second of waiting for redeliveries.
			var grpcRes struct {
				First []javaReceived `json:"first"`
			}
			raw := runGrpcJavaConsumerRaw(t, "simple", endpoint, topic, "GID_compress_"+typ, "true", strconv.Itoa(n), "-none", "2", "1", "1")
			if err := json.Unmarshal(raw, &grpcRes); err != nil {
				t.Fatalf("GrpcSimpleConsumer: %v in %s", err, raw)
			}
			received := grpcRes.First
			for _, m := range received {
				if want, ok := bodyOf[m.ID]; !ok || m.Body != want {
					t.Fatalf("gRPC SimpleConsumer got %s with a %d-byte body, want the %d bytes pulled over remoting", m.ID, len(m.Body), len(want))
				}
			}
			if len(received) != n {
				t.Fatalf("gRPC SimpleConsumer got %d of %d", len(received), n)
			}

			bodies := regexp.MustCompile(`BODY: (\S{64})`)
			ours, err := c.MQAdmin(t, "printMsg", "-t", topic)
			if err != nil {
				t.Fatal(err)
			}
			java, err := harness.RunJavaMQAdmin(t, "printMsg", "-n", c.NamesrvAddr(), "-t", topic)
			if err != nil {
				t.Fatal(err)
			}
			o, j := bodies.FindAllStringSubmatch(ours, -1), bodies.FindAllStringSubmatch(java, -1)
			if len(o) != n || len(j) != n {
				t.Fatalf("printMsg bodies: ours %d, Java's %d, want %d\n%s", len(o), len(j), n, ours)
			}
			for i := range o {
				if o[i][1] != j[i][1] || strings.ContainsAny(o[i][1], "\x00\x04") {
					t.Fatalf("printMsg body %d: ours %q, Java's %q", i, o[i][1], j[i][1])
				}
			}
		})
	}
}
