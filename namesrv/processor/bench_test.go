package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// BenchmarkRegisterBrokerRequest is a whole REGISTER_BROKER for a broker
// with 100k topics: JSON body decoding (about 18 MB, above the default 16 MiB
// frame limit — Java brokers that large split or compress their
// registration) plus the route-table update.
func BenchmarkRegisterBrokerRequest(b *testing.B) {
	f := newFixture(b, nil)
	topics := make([]string, 100_000)
	for i := range topics {
		topics[i] = fmt.Sprintf("bench-topic-%06d", i)
	}
	bodies := [][]byte{regBody(1, topics...), regBody(2, topics...)}
	ext := brokerExt("C", "broker-a", "10.0.0.1:10911", 0)
	b.SetBytes(int64(len(bodies[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := remoting.NewRequest(code.RegisterBroker, ext, bodies[i%2])
		i++
		resp, _ := f.p.Handle(context.Background(), nil, req)
		if resp.Code != code.Success {
			b.Fatalf("%d %s", resp.Code, resp.Remark)
		}
	}
}

// BenchmarkGetRouteRequest is a whole GET_ROUTEINFO_BY_TOPIC through Handle
// (header validation, cached route, response command).
func BenchmarkGetRouteRequest(b *testing.B) {
	f := newFixture(b, nil)
	topics := make([]string, 1000)
	for i := range topics {
		topics[i] = fmt.Sprintf("bench-topic-%06d", i)
	}
	for br := range 3 {
		req := remoting.NewRequest(code.RegisterBroker, brokerExt("C", fmt.Sprintf("broker-%d", br), fmt.Sprintf("10.0.0.%d:10911", br), 0), regBody(1, topics...))
		f.p.Handle(context.Background(), nil, req)
	}
	ext := make([]map[string]string, len(topics))
	for i, t := range topics {
		ext[i] = map[string]string{"topic": t}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		resp, _ := f.p.Handle(context.Background(), nil, remoting.NewRequest(code.GetRouteInfoByTopic, ext[i%len(ext)], nil))
		i++
		if resp.Code != code.Success {
			b.Fatal(resp.Code)
		}
	}
}
