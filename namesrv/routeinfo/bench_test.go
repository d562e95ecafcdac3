package routeinfo

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

const (
	benchTopics  = 100_000
	benchBrokers = 100
)

func benchTopicName(i int) string { return fmt.Sprintf("bench-topic-%06d", i) }

// buildTable registers benchBrokers masters; topic i lives on perTopic
// consecutive brokers starting at i % benchBrokers.
func buildTable(b *testing.B, perTopic int, cacheBytes int64) *Manager {
	b.Helper()
	m := New(Options{RouteCacheBytes: cacheBytes})
	names := make([]string, benchTopics)
	for i := range names {
		names[i] = benchTopicName(i)
	}
	for br := range benchBrokers {
		tcs := map[string]protocol.TopicConfig{}
		for i := range benchTopics {
			if (br-i%benchBrokers+benchBrokers)%benchBrokers < perTopic {
				tcs[names[i]] = protocol.TopicConfig{TopicName: names[i], Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8}
			}
		}
		m.RegisterBroker(Registration{
			Cluster: "DefaultCluster", BrokerName: fmt.Sprintf("broker-%03d", br), BrokerAddr: fmt.Sprintf("10.0.%d.%d:10911", br/250, br%250),
			HAServerAddr: "ha", EnableActingMaster: boolp(false), DataVersion: protocol.DataVersion{Counter: 1}, TopicConfigs: tcs,
		})
	}
	if got := m.TopicCount(); got != benchTopics {
		b.Fatalf("%d topics", got)
	}
	return m
}

func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// BenchmarkGetRoute measures GET_ROUTEINFO_BY_TOPIC's table work: random
// topics out of 100k, 100 brokers. "cold" disables the encoded-route cache
// (every call encodes), "warm" serves from it.
func BenchmarkGetRoute(b *testing.B) {
	for _, tc := range []struct {
		name     string
		perTopic int
	}{{"3of100brokers", 3}, {"100of100brokers", 100}} {
		for _, cache := range []struct {
			name  string
			bytes int64
		}{{"warm", 3 << 30}, {"cold", -1}} {
			b.Run(tc.name+"/"+cache.name, func(b *testing.B) {
				before := heapMB()
				m := buildTable(b, tc.perTopic, cache.bytes)
				table := heapMB() - before
				if cache.bytes > 0 {
					for i := range benchTopics { // fill the cache
						m.RouteJSON(benchTopicName(i))
					}
				}
				names := make([]string, benchTopics)
				for i := range names {
					names[i] = benchTopicName(i)
				}
				var size int
				b.ReportAllocs()
				b.ResetTimer()
				x := uint32(1)
				for b.Loop() {
					x = x*1664525 + 1013904223
					r, ok := m.RouteJSON(names[x%benchTopics])
					if !ok {
						b.Fatal("missing route")
					}
					size = len(r.Bytes())
				}
				b.ReportMetric(float64(size), "bodyB")
				b.ReportMetric(table, "tableMB")
				b.ReportMetric(float64(m.CacheBytes())/(1<<20), "cacheMB")
			})
		}
	}
	b.Run("3of100brokers/warm-parallel", func(b *testing.B) {
		m := buildTable(b, 3, 1<<30)
		names := make([]string, benchTopics)
		for i := range names {
			names[i] = benchTopicName(i)
		}
		var seed atomic.Uint32
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			x := seed.Add(7919)
			for pb.Next() {
				x = x*1664525 + 1013904223
				if _, ok := m.RouteJSON(names[x%benchTopics]); !ok {
					b.Error("missing route")
					return
				}
			}
		})
	})
}

func benchRegistration(counter int64) Registration {
	tcs := make(map[string]protocol.TopicConfig, benchTopics)
	for i := range benchTopics {
		n := benchTopicName(i)
		tcs[n] = protocol.TopicConfig{TopicName: n, Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8}
	}
	return Registration{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "10.0.0.1:10911", HAServerAddr: "ha",
		EnableActingMaster: boolp(false), DataVersion: protocol.DataVersion{Counter: counter}, TopicConfigs: tcs}
}

// BenchmarkRegisterBroker measures one broker registering 100k topics (the
// route-table work; body decoding is in the processor's benchmark):
// first = into an empty table, newVersion = periodic registration after a
// topic change (every topic re-checked under the write lock), sameVersion =
// the common periodic registration (checked under the read lock).
func BenchmarkRegisterBroker(b *testing.B) {
	r := benchRegistration(1)
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			m := New(Options{})
			b.StartTimer()
			m.RegisterBroker(r)
		}
	})
	for _, bc := range []struct {
		name       string
		newVersion bool
	}{{"newVersion", true}, {"sameVersion", false}} {
		b.Run(bc.name, func(b *testing.B) {
			m := New(Options{})
			m.RegisterBroker(r)
			b.ReportAllocs()
			for b.Loop() {
				if bc.newVersion {
					r.DataVersion.Counter++
				}
				m.RegisterBroker(r)
			}
		})
	}
}
