package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestJavaMQAdminMoreCommands runs Apache's mqadmin against our broker for
// the request codes the newer commands need (three runs of the Java tool:
// a few seconds): updateSubGroupList (225) creates the groups our
// getConsumerConfig (201) shows, producer (328) lists a live producer, and
// exportMetadata -b -t (21, 305) writes the file ours writes.
func TestJavaMQAdminMoreCommands(t *testing.T) {
	skipShort(t, "the Java tool takes a few seconds per command")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1})
	java := javaMQAdmin(t, c)
	addr := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", "MoreT", "-r", "2", "-w", "2")

	dir := t.TempDir()
	groups := filepath.Join(dir, "groups.json")
	if err := os.WriteFile(groups, []byte(`[{"groupName":"more_g1","retryMaxTimes":3},{"groupName":"more_g2","consumeEnable":false}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := java("updateSubGroupList", "-b", addr, "-f", groups)
	mustContain(t, out, "submit batch of group config to "+addr+" success")
	ours := mqadmin(t, c, "getConsumerConfig", "-g", "more_g1")
	mustContain(t, ours, "=============================DefaultCluster:broker-a=============================",
		"groupName                               =  more_g1", "retryMaxTimes                           =  3")

	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}}, Group: "more_pg"})
	started(t, p, err)
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.SendSync(ctx, &message.Message{Topic: "MoreT", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, java("producer", "-b", addr), "producer group (more_pg) instance : clientId="+p.ClientID()+",remoteIP=/127.0.0.1:", "language=GO")

	jdir, odir := filepath.Join(dir, "java"), filepath.Join(dir, "ours")
	java("exportMetadata", "-b", addr, "-t", "-f", jdir)
	mqadmin(t, c, "exportMetadata", "-b", addr, "-t", "-f", odir)
	jfile, err := os.ReadFile(filepath.Join(jdir, "topic.json"))
	if err != nil {
		t.Fatal(err)
	}
	ofile, err := os.ReadFile(filepath.Join(odir, "topic.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(jfile) != string(ofile) || !strings.Contains(string(jfile), `"MoreT":{`) || strings.Contains(string(jfile), `"TBW102"`) {
		t.Fatalf("topic.json\njava:\n%s\nours:\n%s", jfile, ofile)
	}
}
