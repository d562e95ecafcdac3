package command

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// dummyOpts is what the dummy command parsed.
type dummyOpts struct {
	topic, queueNum, mapFile, cluster string
	list, force                       bool
}

// newDummyRoot is a root with a command shaped like updateStaticTopic /
// remappingStaticTopic: multi-letter Java short options -qn and -mf next to
// single letters, including -q (bool) so that "-qn" could be misread as
// "-q -n".
func newDummyRoot(got *dummyOpts, ran *bool) *cobra.Command {
	env := &Env{}
	env.fill()
	a := &app{env: env}
	root := newRoot(a)
	c := newCmd("dummyStatic", "A command with multi-letter short options.")
	fs := c.Flags()
	stringOpt(fs, &got.topic, "t", "topic", "topic name")
	stringOpt(fs, &got.queueNum, "qn", "queueNum", "total queue num")
	stringOpt(fs, &got.mapFile, "mf", "mapFile", "the mapping file")
	stringOpt(fs, &got.cluster, "c", "clusterName", "cluster")
	boolOpt(fs, &got.list, "l", "list", "list")
	boolOpt(fs, &got.force, "q", "quiet", "a single-letter q")
	c.RunE = a.run(func(*cobra.Command) error { *ran = true; return nil })
	root.AddCommand(c)
	return root
}

func TestNormalizeArgs(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"dummyStatic -qn 8 -t T", "dummyStatic --queueNum 8 -t T"},
		{"dummyStatic -qn=8 -mf /tmp/m.json", "dummyStatic --queueNum=8 --mapFile /tmp/m.json"},
		{"DUMMYSTATIC -t T", "dummyStatic -t T"},          // case-insensitive command
		{"dummystatic -lt T", "dummyStatic -lt T"},        // short cluster untouched
		{"dummyStatic -tTopic", "dummyStatic -tTopic"},    // attached value untouched
		{"dummyStatic -t -qn", "dummyStatic -t -qn"},      // a value is never rewritten
		{"dummyStatic -topic T", "dummyStatic --topic T"}, // -longName as commons-cli
		{"dummyStatic -n ns:9876 -qn 3", "dummyStatic -n ns:9876 --queueNum 3"},
		{"-n ns:9876 dummyStatic -qn 3", "-n ns:9876 dummyStatic --queueNum 3"},
		{"-n dummyStatic topicList -qn 3", "-n dummyStatic topicList -qn 3"}, // "dummyStatic" is -n's value
		{"dummyStatic -- -qn", "dummyStatic -- -qn"},
		{"dummyStatic --queueNum 3 -q", "dummyStatic --queueNum 3 -q"},
		{"dummyStatic -ql", "dummyStatic -ql"},
		{"unknownCmd -qn 3", "unknownCmd -qn 3"},
		{"topicList -qn 3", "topicList -qn 3"}, // not an option of topicList
		{"", ""},
	} {
		var got dummyOpts
		var ran bool
		root := newDummyRoot(&got, &ran)
		out := strings.Join(NormalizeArgs(root, strings.Fields(tc.in)), " ")
		if out != tc.want {
			t.Errorf("NormalizeArgs(%q) = %q, want %q", tc.in, out, tc.want)
		}
	}
}

// TestMultiLetterShortParses runs the rewritten command lines through cobra.
func TestMultiLetterShortParses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want dummyOpts
	}{
		{"dummyStatic -qn 8 -t T -c C", dummyOpts{topic: "T", queueNum: "8", cluster: "C"}},
		{"dummyStatic -t T -qn=16 -mf m.json -lq", dummyOpts{topic: "T", queueNum: "16", mapFile: "m.json", list: true, force: true}},
		{"dummyStatic -tT -q", dummyOpts{topic: "T", force: true}},
		{"dummyStatic -topic T -clusterName C", dummyOpts{topic: "T", cluster: "C"}},
	} {
		var got dummyOpts
		var ran bool
		root := newDummyRoot(&got, &ran)
		root.SetArgs(NormalizeArgs(root, strings.Fields(tc.in)))
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !ran || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: ran=%v got %+v, want %+v", tc.in, ran, got, tc.want)
		}
	}
	// Without the rewrite pflag reads -qn as -q -n: the proof that it matters.
	var got dummyOpts
	var ran bool
	root := newDummyRoot(&got, &ran)
	root.SetArgs([]string{"dummyStatic", "-qn", "8"})
	_ = root.ExecuteContext(context.Background())
	if got.queueNum == "8" {
		t.Fatal("expected pflag to misparse -qn without NormalizeArgs")
	}
}

func TestHelpShowsMultiLetterShort(t *testing.T) {
	var got dummyOpts
	var ran bool
	root := newDummyRoot(&got, &ran)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"help", "dummyStatic"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usage: mqadmin dummyStatic", " -qn,--queueNum <arg>", " -mf,--mapFile <arg>", " -q,--quiet ", " -h,--help "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
