package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/internal/browser"
)

// startConsole runs `mqadmin dashboard` (the binary) against c on a free
// loopback port and returns its base URL; it is stopped when t ends.
func startConsole(t *testing.T, c framework.Cluster) string {
	t.Helper()
	bin := filepath.Join(harness.BuildBinaries(t), harness.MQAdmin)
	addr := harness.LateAddr(t)
	cmd := exec.Command(bin, "dashboard", "-n", c.NamesrvAddr(), "--listen", addr, "--sampleInterval", "300ms")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mqadmin dashboard exited with %v:\n%s", err, out.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("mqadmin dashboard did not stop on SIGTERM")
		}
	})
	harness.WaitTCP(t, addr, 20*time.Second)
	return "http://" + addr + "/"
}

// screenshotDir is $RMQ_SCREENSHOT_DIR, else a temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("RMQ_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// consolePage opens hash on the console and waits until the page rendered
// (main[data-state=ready]); it returns the page's text.
func consolePage(t *testing.T, p *browser.Page, base, hash string) string {
	t.Helper()
	// A hash change renders asynchronously: mark the old page stale first.
	p.MustEval(t, "(() => { const m = document.getElementById('main'); if (m) m.dataset.state = 'stale'; })()", nil)
	p.Navigate(t, base+"#"+hash)
	waitRendered(t, p, hash)
	var text string
	p.MustEval(t, "document.getElementById('main').innerText", &text)
	return text
}

func waitRendered(t *testing.T, p *browser.Page, hash string) {
	t.Helper()
	p.WaitFor(t, fmt.Sprintf("location.hash === %q && document.getElementById('main').dataset.state === 'ready'", "#"+hash),
		20*time.Second, "location.hash + ' ' + document.getElementById('main').dataset.state + ': ' + document.getElementById('main').innerText")
}

func wantText(t *testing.T, page, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s page lacks %q:\n%s", page, w, text)
		}
	}
}

// TestConsolePages loads every page of the web console (mqadmin
// dashboard) in headless Chromium against a real two-broker cluster and
// checks what it rendered: broker names and versions, a topic's route and
// queue offsets, a static topic's mapping, a group's lag per queue, an
// online consumer's connection, lite topics of a parent page by page with
// their lag, a pop consumer's unacked messages, a message found by key, id
// and offset and its trace record, the TPS and lag charts; then it creates a
// topic and a group and resets a group's offset through the page (confirmation
// dialog, CSRF token) and checks them with the admin client. Screenshots
// of every page go to $RMQ_SCREENSHOT_DIR (else a temporary directory).
func TestConsolePages(t *testing.T) {
	skipShort(t, "starts a cluster and Chromium")
	t.Parallel()
	b := browser.Start(t) // skips without chromium
	c := startCluster(t, framework.Options{Brokers: 2, BrokerConf: map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true", "traceTopicEnable": "true",
	}})
	mq := func(args ...string) string { return mqadmin(t, c, args...) }
	ctx := context.Background()
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()

	const topic, group, key = "ConsoleTopic", "console_cg", "console-key"
	testutil.Eventually(t, 20*time.Second, func() error {
		_, err := c.MQAdmin(t, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
		if err != nil {
			return err
		}
		r, err := ac.GetTopicRoute(ctx, topic)
		if err != nil || len(r.QueueDatas) < 2 {
			return fmt.Errorf("route of %s not complete: %v", topic, err)
		}
		return nil
	})
	mq("updateSubGroup", "-c", "DefaultCluster", "-g", group)
	// Ten messages on broker-a queue 0, the first with a key.
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	brokerA := c.Masters()[0]
	for i := range 10 {
		kv := []string{message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("CONSOLE%020d", i)}
		if i == 0 {
			kv = append(kv, message.PropertyKeys, key)
		}
		resp := remotingtest.Invoke(t, rc, brokerA.Addr(), code.SendMessage, remotingtest.SendExt(t, "console_pg", topic, 0, kv...), []byte(fmt.Sprintf("console body %d", i)))
		remotingtest.Want(t, "send", resp, code.Success, "")
	}
	mqA := protocol.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}
	if err := ac.UpdateConsumerOffset(ctx, brokerA.Addr(), group, topic, 0, 7); err != nil {
		t.Fatal(err)
	}
	// A %RETRY% topic makes the group listed (as consumerProgress lists groups).
	mq("updateTopic", "-c", "DefaultCluster", "-t", protocol.RetryGroupTopicPrefix+group, "-r", "1", "-w", "1")
	// A static topic over both brokers.
	mq("updateStaticTopic", "-t", "ConsoleStatic", "-qn", "4", "-b", "broker-a,broker-b")
	// A lite parent with three lite topics and a bound group.
	mq("updateTopic", "-c", "DefaultCluster", "-t", "ConsoleLite", "-r", "1", "-w", "1", "-a", "+message.type=LITE")
	mq("updateSubGroup", "-c", "DefaultCluster", "-g", "console_lite_cg", "--attributes", "+lite.bind.topic=ConsoleLite")
	for _, lite := range []string{"lite_1", "lite_2", "lite_3"} {
		for _, bp := range c.Masters() {
			ext := remotingtest.SendExt(t, "console_pg", "ConsoleLite", 0, message.PropertyLiteTopic, lite,
				message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("LITE%s%d", lite, time.Now().UnixNano()))
			remotingtest.Want(t, "lite send", remotingtest.Invoke(t, rc, bp.Addr(), code.SendMessage, ext, []byte("x")), code.Success, "")
		}
	}

	// Three more on broker-a's lite_3: it leads the group's lag top-K.
	for i := range 3 {
		ext := remotingtest.SendExt(t, "console_pg", "ConsoleLite", 0, message.PropertyLiteTopic, "lite_3",
			message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("LITEMORE%d%d", i, time.Now().UnixNano()))
		remotingtest.Want(t, "lite send", remotingtest.Invoke(t, rc, brokerA.Addr(), code.SendMessage, ext, []byte("x")), code.Success, "")
	}

	// 50 more groups on broker-a, console_many_NN with lag NN+1 on
	// ConsoleMany: the sampler reads every group (one request per broker).
	mq("updateTopic", "-b", brokerA.Addr(), "-t", "ConsoleMany", "-r", "1", "-w", "1")
	for i := range 50 {
		ext := remotingtest.SendExt(t, "console_pg", "ConsoleMany", 0, message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("MANY%020d", i))
		remotingtest.Want(t, "many send", remotingtest.Invoke(t, rc, brokerA.Addr(), code.SendMessage, ext, []byte("m")), code.Success, "")
	}
	var manyGroups []admin.SubscriptionGroupConfig
	var manyRetry []protocol.TopicConfig
	for i := range 50 {
		g := fmt.Sprintf("console_many_%02d", i)
		manyGroups = append(manyGroups, admin.NewSubscriptionGroupConfig(g))
		tc := protocol.NewTopicConfig(protocol.RetryTopic(g))
		tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
		manyRetry = append(manyRetry, tc)
	}
	if err := ac.CreateSubscriptionGroupList(ctx, brokerA.Addr(), manyGroups); err != nil {
		t.Fatal(err)
	}
	if err := ac.CreateTopicList(ctx, brokerA.Addr(), manyRetry); err != nil {
		t.Fatal(err)
	}
	for i, g := range manyGroups {
		if err := ac.UpdateConsumerOffset(ctx, brokerA.Addr(), g.GroupName, "ConsoleMany", 0, int64(49-i)); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		_, err := ac.GetTopicRoute(ctx, protocol.RetryTopic("console_many_45"))
		return err
	})

	// A client-go producer and push consumer with message trace on: their
	// trace records (send, consume before and after) reach the trace topic.
	// In a process of their own: client-go's trace client is process-wide
	// (tests/cmd/gotrace says why).
	mq("updateTopic", "-c", "DefaultCluster", "-t", "ConsoleTraced", "-r", "1", "-w", "1")
	testutil.Eventually(t, 20*time.Second, func() error {
		r, err := ac.GetTopicRoute(ctx, "ConsoleTraced")
		if err == nil && len(r.QueueDatas) < 2 {
			err = fmt.Errorf("route of ConsoleTraced not complete")
		}
		return err
	})
	goSentID := startGoTrace(t, c.NamesrvAddr(), "ConsoleTraced", "console_go_pg", "console_go_cg")

	// A client's trace record (Java's TraceDataEncoder format) of message 3.
	const tracedID = "CONSOLE00000000000000000003"
	traceRec := strings.Join([]string{"Pub", fmt.Sprint(time.Now().UnixMilli()), "DefaultRegion", "console_pg", topic, tracedID, "", "",
		brokerA.Addr(), "15", "7", "0", "true"}, "\x01") + "\x02"
	remotingtest.Want(t, "trace send", remotingtest.Invoke(t, rc, brokerA.Addr(), code.SendMessage,
		remotingtest.SendExt(t, "console_trace_pg", protocol.TraceTopic, 0, message.PropertyKeys, tracedID), []byte(traceRec)), code.Success, "")

	// An online push consumer (its connection is listed) and a pop
	// consumer holding two messages unacked (pop status shows them).
	common := sdkCommon(c, nil, "console")
	mq("updateTopic", "-c", "DefaultCluster", "-t", "ConsoleOnline", "-r", "1", "-w", "1")
	pc, err := client.NewPushConsumer(client.PushConsumerConfig{CommonConfig: common, Group: "console_online_cg",
		Handler: func(context.Context, *client.ConsumeRequest) client.ConsumeResult { return client.ConsumeSuccess }})
	subscribed(t, pc, err, "ConsoleOnline")
	defer pc.Shutdown(context.Background())
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{CommonConfig: common, Group: "console_pop_cg",
		AwaitDuration: 500 * time.Millisecond, ConsumeFrom: client.ConsumeFromFirstOffset})
	subscribed(t, sc, err, topic)
	defer sc.Shutdown(context.Background())
	popped := 0
	testutil.Eventually(t, 20*time.Second, func() error {
		msgs, err := sc.Receive(ctx, 2-popped, time.Minute)
		if err != nil {
			return err
		}
		if popped += len(msgs); popped < 2 {
			return fmt.Errorf("popped %d of 2", popped)
		}
		return nil
	})

	base := startConsole(t, c)
	shots := screenshotDir(t)
	p := b.NewPage(t)
	shot := func(name string) { p.Screenshot(t, filepath.Join(shots, "console-"+name+".png")) }

	text := consolePage(t, p, base, "/cluster")
	wantText(t, "cluster", text, "broker-a", "broker-b", "DefaultCluster", "MASTER", "V5_")
	shot("cluster")

	text = consolePage(t, p, base, "/topics")
	wantText(t, "topics", text, topic, "ConsoleStatic", "ConsoleLite")
	shot("topics")

	text = consolePage(t, p, base, "/topic/"+topic)
	wantText(t, "topic", text, "broker-a", "broker-b", group)
	var maxOffset string
	p.MustEval(t, `[...document.querySelectorAll('#queue-offsets tbody tr')].filter(r => r.cells[0].textContent === 'broker-a' && r.cells[1].textContent === '0').map(r => r.cells[3].textContent).join()`, &maxOffset)
	if maxOffset != "10" {
		t.Errorf("topic page: broker-a queue 0 max offset %q, want 10", maxOffset)
	}
	shot("topic")

	text = consolePage(t, p, base, "/topic/ConsoleStatic")
	wantText(t, "static topic", text, "Static topic: 4 logic queues")
	var leaders []string
	p.MustEval(t, `[...document.querySelectorAll('#static-mapping tbody tr')].map(r => r.cells[0].textContent + '@' + r.cells[1].textContent)`, &leaders)
	if len(leaders) != 4 {
		t.Errorf("static mapping rows %v, want one per logic queue", leaders)
	}
	for _, l := range leaders {
		if !regexp.MustCompile(`^[0-3]@broker-[ab]$`).MatchString(l) {
			t.Errorf("static mapping row %q", l)
		}
	}
	shot("static")

	text = consolePage(t, p, base, "/groups")
	wantText(t, "groups", text, group, "OFFLINE")
	shot("groups")
	// Filtered and paged: the last 10 of the 50 console_many groups.
	text = consolePage(t, p, base, "/groups?filter=console_many_&offset=40&limit=20")
	var pagedGroups []string
	p.MustEval(t, `[...document.querySelectorAll('#groups tbody tr')].map(r => r.cells[0].textContent + '=' + r.cells[6].textContent)`, &pagedGroups)
	if len(pagedGroups) != 10 || pagedGroups[0] != "console_many_40=41" || pagedGroups[9] != "console_many_49=50" {
		t.Errorf("groups page 3 of console_many_ (by 20): %q", pagedGroups)
	}
	wantText(t, "groups paged", text, "groups 41–50 of 50", "← Previous page")

	text = consolePage(t, p, base, "/group/"+group)
	var lag string
	p.MustEval(t, `document.querySelector('#lag-total b').textContent`, &lag)
	if lag != "3" {
		t.Errorf("group page: lag %q, want 3 (10 messages, offset 7)\n%s", lag, text)
	}
	shot("group")

	// Reset the offset to the earliest message through the page.
	p.MustEval(t, fmt.Sprintf(`(() => { const f = document.getElementById('reset-offset'); f.topic.value = %q; f.time.value = ''; f.requestSubmit(); })()`, topic), nil)
	p.WaitFor(t, "document.getElementById('confirm').open", 5*time.Second, "document.body.innerText")
	var question string
	p.MustEval(t, "document.getElementById('confirm-text').textContent", &question)
	wantText(t, "reset confirmation", question, group, topic, "earliest")
	shot("reset-confirm")
	p.MustEval(t, "document.getElementById('confirm-ok').click()", nil)
	p.WaitFor(t, "document.getElementById('reset-result').textContent !== ''", 20*time.Second, "document.getElementById('reset-result').textContent")
	var result string
	p.MustEval(t, "document.getElementById('reset-result').textContent", &result)
	if !strings.Contains(result, "broker-a[0]=0") {
		t.Errorf("reset result %q", result)
	}
	st, err := ac.ExamineConsumeStats(ctx, "", group, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.OffsetTable[mqA].ConsumerOffset; got != 0 {
		t.Errorf("after the console's reset: consumer offset %d, want 0", got)
	}

	// Reset broker-a queue 0 to offset 4 through the per-queue form.
	consolePage(t, p, base, "/group/"+group+"?after=time-reset")
	p.MustEval(t, `(() => { const f = document.getElementById('reset-offset-queues'); f.topic.value = '`+topic+`'; f.topic.dispatchEvent(new Event('change'));
		document.querySelector('#reset-queues input[data-broker="broker-a"][data-queue="0"]').value = '4'; f.requestSubmit(); })()`, nil)
	p.WaitFor(t, "document.getElementById('confirm').open", 5*time.Second, "document.body.innerText")
	p.MustEval(t, "document.getElementById('confirm-text').textContent", &question)
	wantText(t, "per-queue reset confirmation", question, group, topic, "broker-a[0] 0 → 4")
	shot("reset-queues-confirm")
	p.MustEval(t, "document.getElementById('confirm-ok').click()", nil)
	p.WaitFor(t, "document.getElementById('reset-queues-result').textContent !== ''", 20*time.Second, "document.getElementById('reset-queues-result').textContent")
	p.MustEval(t, "document.getElementById('reset-queues-result').textContent", &result)
	if result != "Offsets reset: broker-a[0]=4" {
		t.Errorf("per-queue reset result %q", result)
	}
	if st, err = ac.ExamineConsumeStats(ctx, "", group, topic); err != nil {
		t.Fatal(err)
	}
	if got := st.OffsetTable[mqA].ConsumerOffset; got != 4 {
		t.Errorf("after the per-queue reset: consumer offset %d, want 4", got)
	}
	consolePage(t, p, base, "/group/"+group+"?after=queue-reset")
	p.MustEval(t, `document.querySelector('#lag-total b').textContent`, &lag)
	if lag != "6" {
		t.Errorf("group page after the per-queue reset: lag %q, want 6", lag)
	}

	// Create a topic through the cluster page.
	consolePage(t, p, base, "/cluster")
	p.MustEval(t, `(() => { const f = document.getElementById('create-topic'); f.topic.value = 'ConsoleCreated'; f.read.value = '3'; f.write.value = '3'; f.requestSubmit(); })()`, nil)
	p.WaitFor(t, "document.getElementById('confirm').open", 5*time.Second, "document.body.innerText")
	p.MustEval(t, "document.getElementById('confirm-ok').click()", nil)
	testutil.Eventually(t, 20*time.Second, func() error {
		r, err := ac.GetTopicRoute(ctx, "ConsoleCreated")
		if err != nil {
			return err
		}
		if len(r.QueueDatas) != 2 || r.QueueDatas[0].WriteQueueNums != 3 {
			return fmt.Errorf("route %+v", r.QueueDatas)
		}
		return nil
	})

	// And a consumer group.
	p.MustEval(t, `(() => { const f = document.getElementById('create-group'); f.group.value = 'console_created_cg'; f.requestSubmit(); })()`, nil)
	p.WaitFor(t, "document.getElementById('confirm').open", 5*time.Second, "document.body.innerText")
	p.MustEval(t, "document.getElementById('confirm-ok').click()", nil)
	testutil.Eventually(t, 20*time.Second, func() error {
		for _, bp := range c.Masters() {
			if _, err := ac.GetSubscriptionGroup(ctx, bp.Addr(), "console_created_cg"); err != nil {
				return err
			}
		}
		return nil
	})

	// Lite topics, two per page: page 1 has lite_1 and lite_2 of broker-a,
	// one message each and no committed offset (-1) for the bound group.
	text = consolePage(t, p, base, "/lite?parent=ConsoleLite&limit=2")
	wantText(t, "lite", text, "lite_1", "lite_2", "console_lite_cg(-1/1)")
	if strings.Contains(text, "lite_3") {
		t.Errorf("lite page 1 shows lite_3:\n%s", text)
	}
	shot("lite")
	var next string
	p.MustEval(t, `[...document.querySelectorAll('#main a')].filter(a => a.textContent.startsWith('Next page')).map(a => a.getAttribute('href')).join()`, &next)
	if next == "" {
		t.Fatalf("lite page 1 has no next page link:\n%s", text)
	}
	var pages []string
	seen := map[string]int{}
	for i := 0; next != "" && i < 5; i++ {
		text = consolePage(t, p, base, strings.TrimPrefix(next, "#"))
		var rows []string
		p.MustEval(t, `[...document.querySelectorAll('#lite-topics tbody tr')].map(r => r.cells[0].textContent + '/' + r.cells[1].textContent)`, &rows)
		pages = append(pages, strings.Join(rows, " "))
		for _, r := range rows {
			seen[r]++
		}
		next = ""
		p.MustEval(t, `[...document.querySelectorAll('#main a')].filter(a => a.textContent.startsWith('Next page')).map(a => a.getAttribute('href')).join()`, &next)
	}
	// Pages after the first: broker-a's lite_3, then broker-b's three.
	for _, want := range []string{"broker-a/lite_3", "broker-b/lite_1", "broker-b/lite_2", "broker-b/lite_3"} {
		if seen[want] != 1 {
			t.Errorf("lite pages %q: %s seen %d times", pages, want, seen[want])
		}
	}

	// The bound group's lag top-K over both brokers, K=2: broker-a's lite_3
	// (4 messages) first, then the first of the five with 1 by name.
	text = consolePage(t, p, base, "/lite?parent=ConsoleLite")
	var lagLinks []string
	p.MustEval(t, `[...document.querySelectorAll('#lite-lag-links a')].map(a => a.textContent + '=' + a.getAttribute('href'))`, &lagLinks)
	if len(lagLinks) != 1 || !strings.HasPrefix(lagLinks[0], "console_lite_cg=#/litelag?") {
		t.Errorf("lite page lag links %q:\n%s", lagLinks, text)
	}
	text = consolePage(t, p, base, "/litelag?parent=ConsoleLite&group=console_lite_cg&topK=2")
	var topK []string
	p.MustEval(t, `[...document.querySelectorAll('#lite-lag-count tbody tr')].map(r => [...r.cells].slice(0, 4).map(c => c.textContent).join('|'))`, &topK)
	if want := []string{"1|broker-a|lite_3|4", "2|broker-a|lite_1|1"}; !slices.Equal(topK, want) {
		t.Errorf("lite lag top-2 %q, want %q:\n%s", topK, want, text)
	}
	var liteTotal string
	p.MustEval(t, `document.querySelector('#lite-lag-total b').textContent`, &liteTotal)
	if liteTotal != "9" {
		t.Errorf("lite lag total %q, want 9 (4+1+1 on broker-a, 1+1+1 on broker-b)", liteTotal)
	}
	shot("lite-lag")

	text = consolePage(t, p, base, "/pop?group=console_pop_cg")
	wantText(t, "pop", text, "broker-a", "broker-b", "Backlog")
	var inflight string
	p.MustEval(t, `[...document.querySelectorAll('table.pop-groups tbody tr')].filter(r => r.cells[0].textContent === 'console_pop_cg' && r.cells[1].textContent === '`+topic+`').map(r => r.cells[3].textContent).join()`, &inflight)
	if inflight != "2" {
		t.Errorf("pop page: console_pop_cg inflight %q, want 2:\n%s", inflight, text)
	}
	shot("pop")

	text = consolePage(t, p, base, "/group/console_online_cg")
	wantText(t, "online group", text, "@console", "GO", "V5_", "ConsoleOnline")
	shot("group-online")

	text = consolePage(t, p, base, "/messages?topic="+topic+"&mode=key&key="+key)
	wantText(t, "messages by key", text, "1 message(s)", "console body 0", "CONSOLE00000000000000000000")
	shot("messages")
	text = consolePage(t, p, base, "/messages?topic="+topic+"&mode=offset&broker=broker-a&queueId=0&offset=4")
	wantText(t, "messages by offset", text, "1 message(s)", "console body 4")
	text = consolePage(t, p, base, "/messages?topic="+topic+"&mode=id&id=CONSOLE00000000000000000002")
	wantText(t, "messages by id", text, "console body 2")

	text = consolePage(t, p, base, "/trace?id="+tracedID)
	var trace []string
	p.MustEval(t, `[...document.querySelectorAll('#traces tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))`, &trace)
	if len(trace) != 1 || !regexp.MustCompile(`^Pub\|console_pg\|127\.0\.0\.1\|.+\|7\|success$`).MatchString(trace[0]) {
		t.Errorf("trace page rows %q:\n%s", trace, text)
	}
	shot("trace")

	// The client-go message's trace: its send and its consumption (before
	// and after), as the client wrote them.
	var goTraceRows []string
	try := 0
	testutil.Eventually(t, 30*time.Second, func() error {
		try++
		text = consolePage(t, p, base, fmt.Sprintf("/trace?id=%s&try=%d", goSentID, try))
		p.MustEval(t, `[...document.querySelectorAll('#traces tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))`, &goTraceRows)
		if len(goTraceRows) < 3 {
			return fmt.Errorf("trace rows %q", goTraceRows)
		}
		return nil
	})
	slices.Sort(goTraceRows)
	wantRows := []*regexp.Regexp{
		regexp.MustCompile(`^Pub\|console_go_pg\|127\.0\.0\.1\|.+\|\d+\|success$`),
		regexp.MustCompile(`^SubAfter\|console_go_cg\|127\.0\.0\.1\|.+\|\d+\|success$`),
		regexp.MustCompile(`^SubBefore\|console_go_cg\|127\.0\.0\.1\|.+\|0\|success$`),
	}
	if len(goTraceRows) != len(wantRows) {
		t.Errorf("client-go trace rows %q", goTraceRows)
	} else {
		for i, re := range wantRows {
			if !re.MatchString(goTraceRows[i]) {
				t.Errorf("client-go trace row %q does not match %s", goTraceRows[i], re)
			}
		}
	}
	shot("trace-client-go")

	// A group past the 20th by name has its lag sampled: its page shows the
	// lag and its chart.
	var groupSeries []string
	try = 0
	testutil.Eventually(t, 20*time.Second, func() error {
		try++
		text = consolePage(t, p, base, fmt.Sprintf("/group/console_many_45?try=%d", try))
		p.MustEval(t, `[...document.querySelectorAll('#chart-group-lag polyline')].map(l => l.dataset.series)`, &groupSeries)
		if !slices.Equal(groupSeries, []string{"console_many_45"}) {
			return fmt.Errorf("console_many_45 lag chart series %q:\n%s", groupSeries, text)
		}
		return nil
	})
	p.MustEval(t, `document.querySelector('#lag-total b').textContent`, &lag)
	if lag != "46" {
		t.Errorf("console_many_45 lag %q, want 46:\n%s", lag, text)
	}
	shot("group-many")

	// The charts: TPS per broker; lag of the 10 groups with the largest lag
	// (console_many_40 to 49) and of the group asked for.
	var series []string
	try = 0
	testutil.Eventually(t, 20*time.Second, func() error {
		try++
		consolePage(t, p, base, fmt.Sprintf("/charts?top=10&groups=%s&try=%d", group, try))
		p.MustEval(t, `[...document.querySelectorAll('#chart-tps-in polyline, #chart-lag polyline')].map(l => l.dataset.series)`, &series)
		if len(series) != 2+11 {
			return fmt.Errorf("chart series %q", series)
		}
		return nil
	})
	wantText(t, "charts", strings.Join(series, " "), "broker-a/0", "broker-b/0", group, "console_many_40", "console_many_45", "console_many_49")
	if slices.Contains(series, "console_many_39") {
		t.Errorf("charts show console_many_39, not among the 10 largest lags: %q", series)
	}
	shot("charts")
}

// TestConsoleCredentials: against a cluster with ACL 2.0 on, a console
// started without -ak/-sk asks for credentials when the broker refuses its
// unsigned request, and after the super user signs in shows the cluster
// (requests of that browser session signed with its keys).
func TestConsoleCredentials(t *testing.T) {
	skipShort(t, "starts a cluster and Chromium")
	t.Parallel()
	b := browser.Start(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"authenticationEnabled":  "true",
		"authorizationEnabled":   "true",
		"initAuthenticationUser": `{"username":"rocketmq","password":"12345678"}`,
	}})
	base := startConsole(t, c)
	p := b.NewPage(t)
	p.Navigate(t, base+"#/cluster")
	p.WaitFor(t, "document.getElementById('login').open", 20*time.Second, "document.getElementById('main').innerText")
	var shown string
	p.MustEval(t, "document.getElementById('main').dataset.state + ': ' + document.getElementById('login-error').textContent", &shown)
	if !strings.HasPrefix(shown, "error: ") || !strings.Contains(shown, "NO_PERMISSION") {
		t.Errorf("before signing in: %q", shown)
	}
	p.Screenshot(t, filepath.Join(screenshotDir(t), "console-login.png"))
	p.MustEval(t, `(() => { document.getElementById('login-ak').value = 'rocketmq'; document.getElementById('login-sk').value = '12345678'; document.getElementById('login-ok').click(); })()`, nil)
	waitRendered(t, p, "/cluster")
	var text, who string
	p.MustEval(t, "document.getElementById('main').innerText", &text)
	p.MustEval(t, "document.getElementById('who').textContent", &who)
	wantText(t, "cluster after sign-in", text, "broker-a", "MASTER")
	wantText(t, "header after sign-in", who, "signed in as rocketmq")
}

// startGoTrace runs tests/cmd/gotrace (a client-go producer and push consumer
// with message trace on) against ns and returns the id of the message it
// sent; the process stays up, sending its trace records, until t ends.
func startGoTrace(t *testing.T, ns, topic, pg, cg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gotrace")
	build := exec.Command("go", "build", "-o", bin, harness.ModulePrefix+"tests/cmd/gotrace")
	build.Dir = harness.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build tests/cmd/gotrace: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-n", ns, "-t", topic, "-pg", pg, "-cg", cg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() {
			for range lines {
			}
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case l, ok := <-lines:
		if id, found := strings.CutPrefix(l, "sent "); ok && found {
			return id
		}
		t.Fatalf("gotrace printed %q; stderr:\n%s", l, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("gotrace sent nothing in 60 s; stderr:\n%s", stderr.String())
	}
	return ""
}
