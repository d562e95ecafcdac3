package admin

import (
	"reflect"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// FuzzRunningInfo: a consumer's running info comes from any client (Java,
// client-go, the C++ client's numbers as strings); decoding never panics,
// and what decodes survives a round trip through Java's format.
func FuzzRunningInfo(f *testing.F) {
	f.Add([]byte(`{"mqTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"cachedMsgCount":2,"cachedMsgMaxOffset":"7","commitOffset":"18446744073709551615","locked":true}},"statusTable":{"T":{"consumeFailedMsgs":"3","pullRT":"2"}},"properties":{"PROP_CONSUMEORDERLY":"flase"},"subscriptionSet":[{"subString":"*","subVersion":"1796604049397","topic":"T"}]}`))
	f.Add([]byte(`{"jstack":"x","mqTable":{},"properties":{"a":1,"b":{"c":null}},"statusTable":{"T":{"consumeOKTPS":1.5e3}},"subscriptionSet":[],"userConsumerInfo":{"k":"v"}}`))
	f.Add([]byte(`{"mqTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":{"commitOffset":-1,"lastPullTimestamp":1.0}}}`))
	f.Add([]byte(`{"statusTable":{"T":{"pullRT":"NaN","pullTPS":"-Inf"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r ConsumerRunningInfo
		if protocol.UnmarshalMQKeyed(data, &r) != nil {
			return
		}
		java, err := protocol.MarshalMQKeyed(r)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", r, err)
		}
		var again ConsumerRunningInfo
		if err := protocol.UnmarshalMQKeyed(java, &again); err != nil {
			t.Fatalf("our own Java-format body %s does not decode: %v", java, err)
		}
		if !reflect.DeepEqual(r.MqTable, again.MqTable) || !reflect.DeepEqual(r.StatusTable, again.StatusTable) ||
			!reflect.DeepEqual(r.SubscriptionSet, again.SubscriptionSet) {
			t.Fatalf("round trip of %s changed %+v into %+v", data, r, again)
		}
	})
}
