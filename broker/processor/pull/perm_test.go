package pull

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestPermissionMatrix: pulls against every topic perm (6 RW, 4 R, 2 W, 0
// none) and broker permission (docs/protocol.md §6.8): both need PERM_READ,
// else NO_PERMISSION with Java's remark; the subscription in the request
// or from the heartbeat makes no difference.
func TestPermissionMatrix(t *testing.T) {
	for _, brokerPerm := range []int{6, 4, 2, 0} {
		f := newFixture(t, fixtureOpt{mutate: func(c *config.Config) { c.BrokerPermission = brokerPerm }})
		for _, perm := range []int{6, 4, 2, 0} {
			name := fmt.Sprintf("Perm%d", perm)
			if _, _, err := f.topics.CreateIfAbsent(mkTopic(name, 2, perm)); err != nil {
				t.Fatal(err)
			}
			f.put(name, 0, "a")
			f.register("g", "CLUSTERING", name, "*", 1)
			want, remark := int32(code.Success), ""
			switch {
			case brokerPerm&protocol.PermRead == 0:
				want, remark = code.NoPermission, "the broker[127.0.0.1] pulling message is forbidden"
			case perm&protocol.PermRead == 0:
				want, remark = code.NoPermission, "the topic["+name+"] pulling message is forbidden"
			}
			for _, sub := range []string{"*", "-"} {
				resp := f.pull(t, pullReq(name, 0, 0, sub))
				if resp.Code != want || !strings.Contains(resp.Remark, remark) {
					t.Errorf("broker perm %d, topic perm %d, subscription %q: %d %q; want %d %q",
						brokerPerm, perm, sub, resp.Code, resp.Remark, want, remark)
				}
			}
		}
	}
}
