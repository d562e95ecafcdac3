package admin_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// pagedGroups answers GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) a page of
// groups g0..g(n-1) at a time, from groupSeq, with totalGroupNum; the data
// version moves once, after the first page, when bump is set.
type pagedGroups struct {
	n, page int
	bump    bool
	calls   int
}

func (p *pagedGroups) Invoke(_ context.Context, _ string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code != code.GetAllSubscriptionGroupConfig {
		return remoting.NewResponse(req, code.RequestCodeNotSupported, "no"), nil
	}
	p.calls++
	seq, _ := strconv.Atoi(req.Ext("groupSeq"))
	version := 1
	if p.bump && p.calls > 1 {
		version = 2
	}
	table := ""
	for i := seq; i < min(seq+p.page, p.n); i++ {
		if table != "" {
			table += ","
		}
		table += fmt.Sprintf(`"g%d":{"groupName":"g%d","retryMaxTimes":%d}`, i, i, i)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = []byte(fmt.Sprintf(`{"dataVersion":{"counter":%d,"timestamp":1},"subscriptionGroupTable":{%s}}`, version, table))
	resp.SetExt("totalGroupNum", strconv.Itoa(p.n))
	return resp, nil
}

// TestGetAllSubscriptionGroups: every page is read (not one short, as
// Java's loop), a moved data version starts over, absent fields keep
// SubscriptionGroupConfig's defaults.
func TestGetAllSubscriptionGroups(t *testing.T) {
	for _, tt := range []struct {
		name      string
		p         *pagedGroups
		wantCalls int
	}{
		{"one page", &pagedGroups{n: 3, page: 10}, 1},
		{"three pages", &pagedGroups{n: 5, page: 2}, 3},
		{"version moves", &pagedGroups{n: 4, page: 2, bump: true}, 4},
	} {
		c, err := admin.NewWithInvoker(admin.Config{}, tt.p, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.GetAllSubscriptionGroups(context.Background(), "b:1")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(got.Groups) != tt.p.n || tt.p.calls != tt.wantCalls {
			t.Fatalf("%s: %d groups in %d calls, want %d in %d", tt.name, len(got.Groups), tt.p.calls, tt.p.n, tt.wantCalls)
		}
		if want := int64(1 + b2i(tt.p.bump)); got.DataVersion.Counter != want {
			t.Fatalf("%s: data version %+v, want counter %d", tt.name, got.DataVersion, want)
		}
		last := got.Groups[fmt.Sprintf("g%d", tt.p.n-1)]
		if last.RetryMaxTimes != tt.p.n-1 || !last.ConsumeEnable || last.RetryQueueNums != 1 {
			t.Fatalf("%s: %+v", tt.name, last)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
