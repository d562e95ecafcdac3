package send

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestPermissionMatrix: sends against every topic perm (6 RW, 4 R, 2 W, 0
// none) and broker permission, for unordered and order topics
// (docs/protocol.md §6.8). The topic needs PERM_WRITE; a broker without WRITE
// rejects only order topics, as Java's msgCheck does (its routes are wiped,
// in-flight sends to unordered topics still land).
func TestPermissionMatrix(t *testing.T) {
	for _, brokerPerm := range []int{6, 4, 2, 0} {
		f := newFixture(t, func(c *config.Config) { c.BrokerPermission = brokerPerm })
		for _, perm := range []int{6, 4, 2, 0} {
			for _, order := range []bool{false, true} {
				name := fmt.Sprintf("Perm%d_%v", perm, order)
				tc := protocol.NewTopicConfig(name)
				tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.Order = 2, 2, perm, order
				if _, err := f.topics.Update(tc); err != nil {
					t.Fatal(err)
				}
				want, remark := int32(code.Success), ""
				switch {
				case order && brokerPerm&protocol.PermWrite == 0:
					want, remark = code.NoPermission, "sending message is forbidden"
				case perm&protocol.PermWrite == 0:
					want, remark = code.NoPermission, "is not writable"
				}
				for kind, resp := range map[string]func() (int32, string){
					"v1": func() (int32, string) { r := f.call(t, sendV1(name, 0, basicProps, "b")); return r.Code, r.Remark },
					"v2": func() (int32, string) { r := f.call(t, sendV2(name, 1, basicProps, "b")); return r.Code, r.Remark },
					"batch": func() (int32, string) {
						r := f.call(t, batchReq(name, 0, batchBody(t, 2, func(int) map[string]string { return nil })))
						return r.Code, r.Remark
					},
				} {
					got, rem := resp()
					if got != want || !strings.Contains(rem, remark) {
						t.Errorf("broker perm %d, topic perm %d, order %v, %s: %d %q; want %d %q",
							brokerPerm, perm, order, kind, got, rem, want, remark)
					}
				}
			}
		}
	}
}
