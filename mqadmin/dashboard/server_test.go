package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// consoleOn serves a console over the fake cluster; the returned client
// keeps the session cookie.
func consoleOn(t *testing.T, fc *admintest.Cluster, cfg Config) (*Server, *httptest.Server, *http.Client) {
	t.Helper()
	cfg.Dial = func(cred *credentials.Credentials) (*admin.Client, error) {
		return admin.NewWithInvoker(admin.Config{NameServers: []string{admintest.SampleNamesrv1}, Credentials: cred, Timeout: time.Second}, fc, nil)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.UnixMilli(1700003600000) }
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); _ = s.Close() })
	jar, _ := cookiejar.New(nil)
	return s, ts, &http.Client{Jar: jar}
}

// do sends a request and decodes the JSON answer into out (may be nil).
func do(t *testing.T, hc *http.Client, method, url, csrf, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf != "" {
		req.Header.Set(csrfHeader, csrf)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, url, err, data)
		}
	}
	return resp.StatusCode
}

func csrfOf(t *testing.T, hc *http.Client, base string) string {
	t.Helper()
	var s sessionInfo
	if code := do(t, hc, "GET", base+"/api/session", "", "", &s); code != 200 || len(s.CSRF) != 64 {
		t.Fatalf("session: %d %+v", code, s)
	}
	return s.CSRF
}

func TestAPICluster(t *testing.T) {
	_, ts, hc := consoleOn(t, admintest.NewSample(), Config{})
	var got clusterView
	if code := do(t, hc, "GET", ts.URL+"/api/cluster", "", "", &got); code != 200 {
		t.Fatalf("status %d", code)
	}
	var rows []string
	for _, b := range got.Brokers {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%g|%g|%t", b.Cluster, b.BrokerName, b.Role, b.Version, b.InTPS, b.DiskRatio, b.Error != ""))
	}
	want := []string{
		"DefaultCluster|broker-a|MASTER|V5_5_0|12.125|0.123456|false",
		"DefaultCluster|broker-a|SLAVE|V5_5_0|0|0|false",
		"DefaultCluster|broker-b|MASTER|V5_5_0|0|0|false",
		"OtherCluster|broker-c|MASTER||0|0|true", // down
	}
	if !slices.Equal(rows, want) || got.Brokers[0].Runtime != nil {
		t.Fatalf("rows (runtime sent: %v):\n%s", got.Brokers[0].Runtime != nil, strings.Join(rows, "\n"))
	}
}

func TestAPITopicAndGroup(t *testing.T) {
	fc := admintest.NewSample()
	cs := admintest.AttachConsumers(fc)
	mq := protocol.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "TopicTest"}
	cs.SetOffset(admintest.SampleBrokerA0, "g1", mq, admintest.OffsetWrapper{BrokerOffset: 120, ConsumerOffset: 100, PullOffset: 110})
	_, ts, hc := consoleOn(t, fc, Config{})

	var topics struct{ Topics []topicItem }
	do(t, hc, "GET", ts.URL+"/api/topics", "", "", &topics)
	if !slices.Contains(topics.Topics, topicItem{"TopicTest", "NORMAL"}) || !slices.Contains(topics.Topics, topicItem{"%RETRY%g1", "RETRY"}) {
		t.Fatalf("topics %+v", topics)
	}
	var tv topicView
	if code := do(t, hc, "GET", ts.URL+"/api/topic?topic=TopicTest", "", "", &tv); code != 200 {
		t.Fatalf("topic: %d", code)
	}
	if len(tv.Route.BrokerDatas) != 2 || tv.Static != nil || !slices.Contains(tv.Groups, "g1") {
		t.Fatalf("topic %+v", tv)
	}
	if i := slices.IndexFunc(tv.Queues, func(q queueStat) bool { return q.BrokerName == "broker-a" && q.QueueID == 0 }); i < 0 || tv.Queues[i].MaxOffset != 120 {
		t.Fatalf("queues %+v", tv.Queues)
	}
	if code := do(t, hc, "GET", ts.URL+"/api/topic", "", "", nil); code != http.StatusBadRequest {
		t.Fatalf("topic without name: %d", code)
	}

	var groups struct{ Groups []struct{ Group string } }
	do(t, hc, "GET", ts.URL+"/api/groups", "", "", &groups)
	if len(groups.Groups) != 1 || groups.Groups[0].Group != "g1" {
		t.Fatalf("groups %+v", groups)
	}
	var gv groupView
	do(t, hc, "GET", ts.URL+"/api/group?group=g1", "", "", &gv)
	if gv.Progress == nil || gv.Progress.DiffTotal != 20 || gv.Progress.InflightTotal != 10 || len(gv.Progress.Queues) != 1 {
		t.Fatalf("group %+v", gv)
	}
}

// TestAPIGroupsPaged: the groups page reads the figures of its page of
// groups only, after the name filter.
func TestAPIGroupsPaged(t *testing.T) {
	fc := admintest.NewSample()
	admintest.AttachConsumers(fc)
	fc.Lock(func() {
		for i := range 30 {
			g := fmt.Sprintf("paged_%02d", i)
			fc.Brokers[0].Topics[protocol.RetryTopic(g)] = protocol.NewTopicConfig(protocol.RetryTopic(g))
		}
	})
	_, ts, hc := consoleOn(t, fc, Config{})
	n0 := len(fc.Calls())
	var page struct {
		Groups               []figures.GroupRow
		Total, Offset, Limit int
	}
	if code := do(t, hc, "GET", ts.URL+"/api/groups?filter=PAGED_&offset=20&limit=8", "", "", &page); code != 200 {
		t.Fatalf("status %d", code)
	}
	var names []string
	for _, g := range page.Groups {
		names = append(names, g.Group)
	}
	if page.Total != 30 || page.Offset != 20 || len(names) != 8 || names[0] != "paged_20" || names[7] != "paged_27" {
		t.Fatalf("page %d/%d/%d %v", page.Total, page.Offset, page.Limit, names)
	}
	stats := 0
	for _, c := range fc.Calls()[n0:] {
		if c.Code == code.GetConsumeStats {
			stats++
		}
	}
	if stats != 8 {
		t.Fatalf("%d GET_CONSUME_STATS for a page of 8 groups", stats)
	}
	do(t, hc, "GET", ts.URL+"/api/groups?filter=paged_&offset=28", "", "", &page)
	if page.Total != 30 || len(page.Groups) != 2 {
		t.Fatalf("last page: %+v", page)
	}
	if code := do(t, hc, "GET", ts.URL+"/api/groups?limit=0", "", "", nil); code != http.StatusBadRequest {
		t.Fatalf("limit=0: %d", code)
	}
}

// TestAPIActionsNeedCSRF: a POST without the session's token changes
// nothing; with it the reset and the creations reach the brokers.
func TestAPIActionsNeedCSRF(t *testing.T) {
	fc := admintest.NewSample()
	cs := admintest.AttachConsumers(fc)
	cs.NotOnline["g1"] = true
	mq := protocol.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "TopicTest"}
	cs.SetOffset(admintest.SampleBrokerA0, "g1", mq, admintest.OffsetWrapper{BrokerOffset: 120, ConsumerOffset: 100, PullOffset: 100})
	cs.SearchOffset = func(addr, topic string, qid int, ts int64) int64 { return 5 }
	_, ts, hc := consoleOn(t, fc, Config{})

	reset := `{"group":"g1","topic":"TopicTest","timestamp":1,"force":true}`
	var e struct{ Error string }
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffset", "", reset, &e); code != http.StatusForbidden || !strings.Contains(e.Error, "CSRF") {
		t.Fatalf("no token: %d %+v", code, e)
	}
	csrf := csrfOf(t, hc, ts.URL)
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffset", "wrong"+csrf[5:], reset, nil); code != http.StatusForbidden {
		t.Fatalf("wrong token: %d", code)
	}
	for _, c := range fc.Calls() {
		if c.Code == code.UpdateConsumerOffset || c.Code == code.InvokeBrokerToResetOffset {
			t.Fatalf("refused POST reached a broker: %+v", c)
		}
	}
	var res struct {
		Offsets    []resetRow
		ViaClients bool
	}
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffset", csrf, reset, &res); code != 200 || res.ViaClients || len(res.Offsets) == 0 {
		t.Fatalf("reset: %d %+v", code, res)
	}
	if !slices.ContainsFunc(fc.Calls(), func(c admintest.Call) bool { return c.Code == code.UpdateConsumerOffset }) {
		t.Fatalf("no offset committed: %v", fc.CallCodes())
	}
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffset", csrf, `{"group":"g1","bogus":1}`, nil); code != http.StatusBadRequest {
		t.Fatalf("bad body: %d", code)
	}

	var created struct{ Brokers []string }
	if code := do(t, hc, "POST", ts.URL+"/api/topic", csrf, `{"cluster":"DefaultCluster","topic":"NewT","readQueues":3,"writeQueues":3}`, &created); code != 200 || len(created.Brokers) != 2 {
		t.Fatalf("create topic: %d %+v", code, created)
	}
	fc.Lock(func() {
		if tc := fc.Brokers[0].Topics["NewT"]; tc.WriteQueueNums != 3 {
			t.Errorf("broker-a's NewT: %+v", tc)
		}
	})
	if code := do(t, hc, "POST", ts.URL+"/api/group", csrf, `{"cluster":"DefaultCluster","group":"newg"}`, &created); code != 200 || len(created.Brokers) != 2 {
		t.Fatalf("create group: %d %+v", code, created)
	}
}

// TestAPICredentials: brokers that refuse unsigned requests (ACL on) make
// the API answer 401 needCredentials; after a login the session's requests
// are signed with its keys, another session's are not.
func TestAPICredentials(t *testing.T) {
	fc := admintest.NewSample()
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code == code.GetBrokerRuntimeInfo && req.ExtFields[credentials.KeyAccessKey] != "alice" {
			return remoting.NewResponse(req, code.NoPermission, "no permission"), true
		}
		return nil, false
	}
	_, ts, hc := consoleOn(t, fc, Config{})
	var e struct {
		Error           string
		NeedCredentials bool
	}
	if code := do(t, hc, "GET", ts.URL+"/api/cluster", "", "", &e); code != http.StatusUnauthorized || !e.NeedCredentials {
		t.Fatalf("unsigned: %d %+v", code, e)
	}
	csrf := csrfOf(t, hc, ts.URL)
	if code := do(t, hc, "POST", ts.URL+"/api/login", csrf, `{"accessKey":"alice","secretKey":""}`, nil); code != http.StatusBadRequest {
		t.Fatalf("blank secret: %d", code)
	}
	if code := do(t, hc, "POST", ts.URL+"/api/login", csrf, `{"accessKey":"alice","secretKey":"s3cret"}`, nil); code != 200 {
		t.Fatalf("login: %d", code)
	}
	var cv clusterView
	if code := do(t, hc, "GET", ts.URL+"/api/cluster", "", "", &cv); code != 200 || cv.Brokers[0].Version != "V5_5_0" {
		t.Fatalf("signed: %d %+v", code, cv)
	}
	var s sessionInfo
	do(t, hc, "GET", ts.URL+"/api/session", "", "", &s)
	if s.AccessKey != "alice" {
		t.Fatalf("session %+v", s)
	}
	jar, _ := cookiejar.New(nil)
	other := &http.Client{Jar: jar}
	if code := do(t, other, "GET", ts.URL+"/api/cluster", "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("another session used alice's keys: %d", code)
	}
	do(t, hc, "POST", ts.URL+"/api/logout", csrf, `{}`, nil)
	if code := do(t, hc, "GET", ts.URL+"/api/cluster", "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("after logout: %d", code)
	}
}

// TestSampler: every group's lag comes from one GET_BROKER_CONSUME_STATS
// per master (50 groups: no per-group request), the window keeps the last
// SampleKeep samples, /api/metrics gives the top groups by lag and the
// groups asked for, and a broker that cannot be read is reported.
func TestSampler(t *testing.T) {
	fc := admintest.NewSample()
	cs := admintest.AttachConsumers(fc)
	for i := range 50 {
		g := fmt.Sprintf("g%02d", i)
		// Lag i+1 on broker-a, 10 more on broker-b for g45.
		cs.SetOffset(admintest.SampleBrokerA0, g, protocol.MessageQueue{BrokerName: "broker-a", Topic: "TopicTest"}, admintest.OffsetWrapper{BrokerOffset: 100, ConsumerOffset: int64(99 - i)})
	}
	cs.SetOffset(admintest.SampleBrokerB0, "g45", protocol.MessageQueue{BrokerName: "broker-b", Topic: "TopicTest"}, admintest.OffsetWrapper{BrokerOffset: 19, ConsumerOffset: 9})
	now := int64(1700003600000)
	s, ts, hc := consoleOn(t, fc, Config{SampleKeep: 2, Now: func() time.Time { now += 1000; return time.UnixMilli(now) }})
	n0 := len(fc.Calls())
	for range 3 {
		s.SampleOnce(context.Background())
	}
	per := map[int32]int{}
	for _, c := range fc.Calls()[n0:] {
		per[c.Code]++
	}
	if per[code.GetConsumeStats] != 0 || per[code.GetBrokerConsumeStats] != 3*2 {
		t.Fatalf("requests per code over 3 samples: %v (want 317 twice a sample, no 208)", per)
	}
	var m metricsView
	do(t, hc, "GET", ts.URL+"/api/metrics?top=3&group=g07&group=nosuch", "", "", &m)
	// OtherCluster's broker-c is down.
	if m.Samples != 2 || m.Groups != 50 || len(m.LagErrors) != 1 || !strings.Contains(m.LagErrors[admintest.SampleBrokerC0], "refused") {
		t.Fatalf("metrics %+v", m)
	}
	if in := m.TPSIn["broker-a/0"]; len(in) != 2 || in[1][1] != 12.125 || in[0][0] >= in[1][0] || m.TPSOut["broker-a/0"][1][1] != 0.125 {
		t.Fatalf("tps %+v", m.TPSIn)
	}
	got := slices.Sorted(maps.Keys(m.Lag))
	if want := []string{"g07", "g45", "g48", "g49"}; !slices.Equal(got, want) {
		t.Fatalf("lag series %v, want the top 3 by lag (g45 has 46+10) and g07", got)
	}
	if l := m.Lag["g45"]; len(l) != 2 || l[1][1] != 56 || m.Lag["g07"][0][1] != 8 {
		t.Fatalf("lag %+v", m.Lag)
	}
	if code := do(t, hc, "GET", ts.URL+"/api/metrics?top=101", "", "", nil); code != http.StatusBadRequest {
		t.Fatalf("top=101: %d", code)
	}

	// broker-b stops answering: its groups' queues are missing, and said so;
	// a group no longer seen leaves the chart once out of the window.
	fc.Lock(func() {
		fc.Down[admintest.SampleBrokerB0] = true
		delete(cs.Offsets[admintest.SampleBrokerA0], "g07")
	})
	s.SampleOnce(context.Background())
	s.SampleOnce(context.Background())
	m = metricsView{}
	do(t, hc, "GET", ts.URL+"/api/metrics?top=1&group=g07", "", "", &m)
	if _, ok := m.Lag["g07"]; ok || m.Groups != 49 || !strings.Contains(m.LagErrors[admintest.SampleBrokerB0], "refused") || m.Lag["g49"][1][1] != 50 {
		t.Fatalf("after broker-b failed: %+v", m)
	}
}

// TestSamplerRunsBesideReaders: Run samples in its own goroutine while
// pages read the series (run with -race).
func TestSamplerRunsBesideReaders(t *testing.T) {
	fc := admintest.NewSample()
	cs := admintest.AttachConsumers(fc)
	cs.SetOffset(admintest.SampleBrokerA0, "g1", protocol.MessageQueue{BrokerName: "broker-a", Topic: "TopicTest"}, admintest.OffsetWrapper{BrokerOffset: 9, ConsumerOffset: 4})
	s, ts, hc := consoleOn(t, fc, Config{SampleInterval: time.Millisecond, SampleKeep: 5, Now: time.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var m metricsView
	for i := 0; i < 200 && (m.Samples < 5 || len(m.Lag["g1"]) < 5); i++ {
		do(t, hc, "GET", ts.URL+"/api/metrics?group=g1", "", "", &m)
		time.Sleep(time.Millisecond)
	}
	if m.Samples != 5 || len(m.Lag["g1"]) != 5 || m.Lag["g1"][4][1] != 5 {
		t.Fatalf("metrics while sampling: %+v", m)
	}
}

// TestAPILiteLag: the lag top-K of a lite group is merged over the brokers
// of the parent's route and cut to K; a broker's failure is shown, not fatal.
func TestAPILiteLag(t *testing.T) {
	fc := admintest.NewSample()
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code != code.GetLiteGroupInfo {
			return nil, false
		}
		if req.Ext("group") != "lg" || req.Ext("topK") != "2" {
			return remoting.NewResponse(req, code.InvalidParameter, "unexpected "+req.Ext("group")+" "+req.Ext("topK")), true
		}
		body := protocol.GetLiteGroupInfoResponseBody{Group: "lg", ParentTopic: "TopicTest"}
		switch addr {
		case admintest.SampleBrokerA0:
			body.TotalLagCount, body.EarliestUnconsumedTimestamp = 12, 1700000000500
			body.LagCountTopK = []protocol.LiteLagInfo{{LiteTopic: "l1", LagCount: 10, EarliestUnconsumedTimestamp: 1700000000900}, {LiteTopic: "l2", LagCount: 2, EarliestUnconsumedTimestamp: 1700000000500}}
			body.LagTimestampTopK = []protocol.LiteLagInfo{body.LagCountTopK[1], body.LagCountTopK[0]}
		case admintest.SampleBrokerB0:
			body.TotalLagCount, body.EarliestUnconsumedTimestamp = 7, 1700000000100
			body.LagCountTopK = []protocol.LiteLagInfo{{LiteTopic: "l9", LagCount: 7, EarliestUnconsumedTimestamp: 1700000000100}}
			body.LagTimestampTopK = body.LagCountTopK
		default:
			return remoting.NewResponse(req, code.SystemError, "down"), true
		}
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = protocol.MustMarshal(body)
		return resp, true
	}
	_, ts, hc := consoleOn(t, fc, Config{})
	var v liteLagView
	if code := do(t, hc, "GET", ts.URL+"/api/liteLag?parent=TopicTest&group=lg&topK=2", "", "", &v); code != 200 {
		t.Fatalf("status %d %+v", code, v)
	}
	row := func(rs []liteLagRow) (out []string) {
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s/%s=%d", r.BrokerName, r.LiteTopic, r.LagCount))
		}
		return out
	}
	if got := row(v.ByCount); !slices.Equal(got, []string{"broker-a/l1=10", "broker-b/l9=7"}) {
		t.Errorf("by count %v", got)
	}
	if got := row(v.ByAge); !slices.Equal(got, []string{"broker-b/l9=7", "broker-a/l2=2"}) {
		t.Errorf("by age %v", got)
	}
	if v.TotalLagCount != 19 || v.EarliestUnconsumedTimestamp != 1700000000100 || len(v.Brokers) != 2 {
		t.Errorf("view %+v", v)
	}
	if code := do(t, hc, "GET", ts.URL+"/api/liteLag?parent=TopicTest&group=other&topK=2", "", "", &v); code != 200 || v.Brokers[0].Error == "" || v.TotalLagCount != 0 {
		t.Errorf("broker errors: %d %+v", code, v)
	}
	if code := do(t, hc, "GET", ts.URL+"/api/liteLag?parent=TopicTest", "", "", nil); code != http.StatusBadRequest {
		t.Errorf("without group: %d", code)
	}
}

// TestAPIResetByQueue: a per-queue reset commits each offset given on the
// queue's master (15, then 222 for that queue); an offset outside the
// queue's range is refused before anything is sent; CSRF as every action.
func TestAPIResetByQueue(t *testing.T) {
	fc := admintest.NewSample()
	cs := admintest.AttachConsumers(fc)
	mq0 := protocol.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "TopicTest"}
	mq1 := protocol.MessageQueue{BrokerName: "broker-a", QueueID: 1, Topic: "TopicTest"}
	cs.SetOffset(admintest.SampleBrokerA0, "g1", mq0, admintest.OffsetWrapper{BrokerOffset: 120, ConsumerOffset: 100})
	_, ts, hc := consoleOn(t, fc, Config{})
	body := `{"group":"g1","topic":"TopicTest","queues":[{"brokerName":"broker-a","queueId":0,"offset":40},{"brokerName":"broker-a","queueId":1,"offset":5}]}`
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffsetByQueue", "", body, nil); code != http.StatusForbidden {
		t.Fatalf("no token: %d", code)
	}
	csrf := csrfOf(t, hc, ts.URL)
	var e struct{ Error string }
	bad := `{"group":"g1","topic":"TopicTest","queues":[{"brokerName":"broker-a","queueId":0,"offset":40},{"brokerName":"broker-a","queueId":1,"offset":8}]}`
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffsetByQueue", csrf, bad, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, "outside [3, 7]") {
		t.Fatalf("offset past max: %d %+v", code, e)
	}
	if slices.ContainsFunc(fc.Calls(), func(c admintest.Call) bool { return c.Code == code.UpdateConsumerOffset }) {
		t.Fatalf("a refused reset committed: %v", fc.CallCodes())
	}
	var res struct{ Offsets []resetRow }
	if code := do(t, hc, "POST", ts.URL+"/api/resetOffsetByQueue", csrf, body, &res); code != 200 || len(res.Offsets) != 2 {
		t.Fatalf("reset: %d %+v", code, res)
	}
	fc.Lock(func() {
		if o := cs.Offsets[admintest.SampleBrokerA0]["g1"]; o[mq0].ConsumerOffset != 40 || o[mq1].ConsumerOffset != 5 {
			t.Errorf("offsets after reset %+v", o)
		}
	})
}

// TestAssetsOffline: the page loads nothing from elsewhere (no CDN) and
// never puts server data in as HTML; the server sends a CSP that forbids
// other origins.
func TestAssetsOffline(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(assetFS, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := assetFS.ReadFile(path)
		if err != nil {
			return err
		}
		text := strings.ReplaceAll(string(data), "http://www.w3.org/2000/svg", "")
		if m := external.FindString(text); m != "" {
			t.Errorf("%s refers to %s", path, m)
		}
		if strings.Contains(text, "innerHTML") || strings.Contains(text, "insertAdjacentHTML") || strings.Contains(text, "document.write") {
			t.Errorf("%s inserts HTML", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, ts, hc := consoleOn(t, admintest.NewSample(), Config{})
	resp, err := hc.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(string(body), `src="app.js"`) {
		t.Fatalf("index: CSP %q\n%s", csp, body)
	}
}

// TestHostCheck: reached by a DNS name it was not told about (a rebound
// name), the console refuses; by IP, localhost or an allowed name it serves.
func TestHostCheck(t *testing.T) {
	_, ts, hc := consoleOn(t, admintest.NewSample(), Config{AllowedHosts: []string{"console.example"}})
	for host, want := range map[string]int{
		"": 200, "localhost:8080": 200, "[::1]:8080": 200, "console.example:80": 200, "CONSOLE.example.": 200,
		"evil.example:8080": http.StatusForbidden, "127.0.0.1.nip.io": http.StatusForbidden,
	} {
		req, _ := http.NewRequest("GET", ts.URL+"/api/session", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
