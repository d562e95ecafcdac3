package admin_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// popStatusBody is a GET_POP_STATUS body as our broker writes it.
const popStatusBody = `{"brokerName":"broker-a","groups":[{"backlog":4,"blockedQueues":1,"checkpoints":2,"group":"g","inFlight":5,` +
	`"oldestPopTime":1700000000000,"overdue":1,"queues":[{"blocked":true,"blockedUntil":1700000003000,"checkpoints":0,"inFlight":2,` +
	`"maxOffset":9,"oldestPopTime":1700000000000,"orderly":true,"overdue":0,"popOffset":5,"queueId":0,"retry":false,"topic":"T"}],` +
	`"retryBacklog":0,"reviveFailing":0,"reviveLagMillis":250,"suspendedPops":1,"topic":"T"}],"now":1700000001000,` +
	`"revive":{"checkpoints":2,"deadLettered":0,"failed":0,"lagMillis":250,"lastRoundCount":1,"lastRoundTime":1700000000900,` +
	`"oldestDue":1700000000750,"overdue":1,"queues":[{"applied":7,"maxOffset":7,"queueId":0}],"revived":3,"topic":"rmq_sys_REVIVE_LOG_C"},` +
	`"totals":{"blockedQueues":1,"checkpoints":2,"groups":1,"inFlight":5,"oldestPopTime":1700000000000,"overdue":1,"suspendedNotifications":0,"suspendedPops":1}}`

func TestPopStatus(t *testing.T) {
	fc, c := fixture(t)
	var got map[string]string
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code != code.GetPopStatus || addr != ba0 {
			return nil, false
		}
		got = req.ExtFields
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = []byte(popStatusBody)
		return resp, true
	}
	ctx := context.Background()
	st, err := c.PopStatus(ctx, ba0, admin.PopStatusQuery{Group: "g", Topic: "T", Detail: true, MaxQueues: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"consumerGroup": "g", "topic": "T", "detail": "true", "maxQueues": "10"}; !reflect.DeepEqual(got, want) {
		t.Errorf("header %v, want %v", got, want)
	}
	if len(st.Groups) != 1 || st.Groups[0].InFlight != 5 || len(st.Groups[0].Queues) != 1 || !st.Groups[0].Queues[0].Blocked ||
		st.Revive.LagMillis != 250 || st.Revive.Queues[0].Applied != 7 || st.Totals.SuspendedPops != 1 {
		t.Fatalf("decoded %+v", st)
	}
	// The body round-trips in the fastjson dialect (alphabetical keys).
	b, err := protocol.Marshal(st)
	if err != nil || string(b) != popStatusBody {
		t.Errorf("re-encoded:\n%s\nwant\n%s", b, popStatusBody)
	}
	if _, err := c.PopStatus(ctx, ba0, admin.PopStatusQuery{}); err != nil || len(got) != 0 {
		t.Errorf("empty query sent %v (%v)", got, err)
	}

	// broker-b is not an rmq-go broker: the fake answers 3.
	all := c.PopStatusOf(ctx, []string{ba0, bb0}, admin.PopStatusQuery{})
	if len(all) != 2 || all[0].Err != nil || all[0].Status == nil || all[1].Status != nil {
		t.Fatalf("PopStatusOf %+v", all)
	}
	if !errors.Is(all[1].Err, admin.ErrPopStatusUnsupported) || !admin.IsCode(all[1].Err, code.RequestCodeNotSupported) {
		t.Errorf("unsupported broker: %v", all[1].Err)
	}
}
