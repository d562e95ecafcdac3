package processor

import (
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// FuzzDecodeRegisterBody: a REGISTER_BROKER body, plain JSON or Apache's
// deflated layout, comes from any peer that reaches the nameserver;
// decoding never panics, and a compressed body of ours reads back.
func FuzzDecodeRegisterBody(f *testing.F) {
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigAndMappingSerializeWrapper{
		DataVersion: protocol.DataVersion{Counter: 2, Timestamp: 3},
		TopicConfigTable: map[string]protocol.TopicConfig{
			"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: protocol.SingleTag, Attributes: map[string]string{"+message.type": "NORMAL"}},
		},
		TopicQueueMappingInfoMap: map[string]protocol.TopicQueueMappingInfo{"T": {Topic: "T", Bname: "a", Epoch: 1, TotalQueues: 1, CurrIDMap: map[int]int{0: 0}}},
	}}
	compressed, err := protocol.EncodeRegisterBodyCompressed(body)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(compressed, true, int32(479))
	f.Add(compressed, true, int32(401))
	f.Add(protocol.MustMarshal(body), false, int32(479))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{}}}}`), false, int32(0))
	f.Add([]byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}, true, int32(479))
	f.Fuzz(func(t *testing.T, data []byte, isCompressed bool, version int32) {
		out, err := decodeRegisterBody(data, isCompressed, version)
		if err != nil {
			return
		}
		for name, tc := range out.topics {
			if name != tc.TopicName {
				t.Fatalf("topic %q decoded under key %q", tc.TopicName, name)
			}
		}
	})
}
