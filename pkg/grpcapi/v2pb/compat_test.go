package v2pb_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// clientProtoDir holds the client's .proto files (see its README.md).
const clientProtoDir = "../third_party/rocketmq-client-nodejs-1.0.8"

var clientFiles = []string{
	"apache/rocketmq/v2/definition.proto",
	"apache/rocketmq/v2/service.proto",
	"apache/rocketmq/v2/admin.proto",
}

// facts flattens descriptors into one line per interface fact: every
// message, field (number, kind, cardinality, referenced type, proto3
// optional, oneof, map), enum value, service and rpc (types, streaming).
// Two sets of files describe the same wire protocol when their facts are
// equal; the file names, layout and comments do not matter.
func facts(files []protoreflect.FileDescriptor) map[string]string {
	out := map[string]string{}
	var enum func(e protoreflect.EnumDescriptor)
	enum = func(e protoreflect.EnumDescriptor) {
		out["enum "+string(e.FullName())] = fmt.Sprintf("values=%d", e.Values().Len())
		for i := 0; i < e.Values().Len(); i++ {
			v := e.Values().Get(i)
			out["enumvalue "+string(e.FullName())+"."+string(v.Name())] = fmt.Sprint(v.Number())
		}
	}
	var msg func(m protoreflect.MessageDescriptor)
	msg = func(m protoreflect.MessageDescriptor) {
		out["message "+string(m.FullName())] = fmt.Sprintf("fields=%d oneofs=%d mapentry=%v", m.Fields().Len(), m.Oneofs().Len(), m.IsMapEntry())
		for i := 0; i < m.Fields().Len(); i++ {
			f := m.Fields().Get(i)
			ref := ""
			switch f.Kind() {
			case protoreflect.MessageKind, protoreflect.GroupKind:
				ref = string(f.Message().FullName())
			case protoreflect.EnumKind:
				ref = string(f.Enum().FullName())
			}
			oneof := ""
			if o := f.ContainingOneof(); o != nil {
				oneof = fmt.Sprintf("%s(synthetic=%v)", o.Name(), o.IsSynthetic())
			}
			out["field "+string(f.FullName())] = fmt.Sprintf("number=%d kind=%v cardinality=%v type=%s optional=%v oneof=%s map=%v packed=%v json=%s",
				f.Number(), f.Kind(), f.Cardinality(), ref, f.HasOptionalKeyword(), oneof, f.IsMap(), f.IsPacked(), f.JSONName())
		}
		for i := 0; i < m.Enums().Len(); i++ {
			enum(m.Enums().Get(i))
		}
		for i := 0; i < m.Messages().Len(); i++ {
			msg(m.Messages().Get(i))
		}
	}
	for _, fd := range files {
		for i := 0; i < fd.Enums().Len(); i++ {
			enum(fd.Enums().Get(i))
		}
		for i := 0; i < fd.Messages().Len(); i++ {
			msg(fd.Messages().Get(i))
		}
		for i := 0; i < fd.Services().Len(); i++ {
			s := fd.Services().Get(i)
			out["service "+string(s.FullName())] = fmt.Sprintf("methods=%d", s.Methods().Len())
			for j := 0; j < s.Methods().Len(); j++ {
				m := s.Methods().Get(j)
				out["rpc "+string(m.FullName())] = fmt.Sprintf("in=%s out=%s clientstream=%v serverstream=%v",
					m.Input().FullName(), m.Output().FullName(), m.IsStreamingClient(), m.IsStreamingServer())
			}
		}
	}
	return out
}

func TestDescriptorsMatchClient(t *testing.T) {
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{clientProtoDir}}),
	}
	compiled, err := compiler.Compile(context.Background(), clientFiles...)
	if err != nil {
		t.Fatalf("compile the client's proto files: %v", err)
	}
	var theirs []protoreflect.FileDescriptor
	for _, f := range compiled {
		theirs = append(theirs, f)
	}
	ours := []protoreflect.FileDescriptor{v2pb.File_rmqgo_v2_types_proto, v2pb.File_rmqgo_v2_messaging_proto, v2pb.File_rmqgo_v2_admin_proto}

	want, got := facts(theirs), facts(ours)
	if len(want) < 400 {
		t.Fatalf("only %d facts read from the client's files: the comparison would prove little", len(want))
	}
	for _, d := range diffFacts(want, got) {
		t.Error(d)
	}
	t.Logf("%d facts compared", len(want))
}

func diffFacts(want, got map[string]string) []string {
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing in ours: "+k+" "+w)
		case g != w:
			diffs = append(diffs, fmt.Sprintf("differs: %s\n  client: %s\n  ours:   %s", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "not in the client: "+k+" "+g)
		}
	}
	sort.Strings(diffs)
	return diffs
}

// TestFactsDetectDifferences makes sure the comparison can fail: changing
// one field number, one rpc's streaming or one enum value changes the facts.
func TestFactsDetectDifferences(t *testing.T) {
	base := facts([]protoreflect.FileDescriptor{v2pb.File_rmqgo_v2_types_proto, v2pb.File_rmqgo_v2_messaging_proto})
	cases := []struct{ key, want string }{
		{"field apache.rocketmq.v2.SystemProperties.message_id", "number=3 kind=string"},
		{"rpc apache.rocketmq.v2.MessagingService.Telemetry", "clientstream=true serverstream=true"},
		{"rpc apache.rocketmq.v2.MessagingService.ReceiveMessage", "clientstream=false serverstream=true"},
		{"enumvalue apache.rocketmq.v2.Code.OK", "20000"},
	}
	for _, c := range cases {
		v, ok := base[c.key]
		if !ok {
			t.Errorf("%s: no such fact", c.key)
			continue
		}
		if !strings.Contains(v, c.want) {
			t.Errorf("%s = %q, want it to contain %q", c.key, v, c.want)
		}
	}
	if d := diffFacts(base, base); len(d) != 0 {
		t.Fatalf("identical facts differ: %v", d)
	}
	changed := map[string]string{}
	for k, v := range base {
		changed[k] = v
	}
	changed["field apache.rocketmq.v2.SystemProperties.message_id"] = strings.Replace(base["field apache.rocketmq.v2.SystemProperties.message_id"], "number=3", "number=4", 1)
	delete(changed, "enumvalue apache.rocketmq.v2.Code.OK")
	changed["rpc apache.rocketmq.v2.MessagingService.Extra"] = "in=x out=y"
	if d := diffFacts(base, changed); len(d) != 3 {
		t.Fatalf("3 changes gave %d differences: %v", len(d), d)
	}
}
