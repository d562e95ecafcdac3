package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type sample struct {
	ListenPort  int           `key:"listenPort"`
	BrokerName  string        `key:"brokerName"`
	AutoCreate  bool          `key:"autoCreateTopicEnable"`
	Ratio       float64       `key:"diskMaxUsedSpaceRatio"`
	Scan        time.Duration `key:"scanNotActiveBrokerInterval"`
	NotAKeyHere string
}

func TestLoadPrecedenceAndUnknown(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "broker.conf")
	os.WriteFile(file, []byte("# comment\nlistenPort = 10911\nbrokerName=broker-a\nautoCreateTopicEnable=false\nbogusKey=1\nscanNotActiveBrokerInterval=5000\n"), 0o644)
	c := sample{ListenPort: 1, Ratio: 75}
	unknown, err := Load(&c, Source{File: file, EnvPrefix: "BROKER", Environ: []string{"BROKER_BROKER_NAME=broker-env"}, Overrides: map[string]string{"listenport": "20911"}})
	if err != nil {
		t.Fatal(err)
	}
	want := sample{ListenPort: 20911, BrokerName: "broker-env", AutoCreate: false, Ratio: 75, Scan: 5 * time.Second}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v want %+v", c, want)
	}
	if !reflect.DeepEqual(unknown, []string{"boguskey"}) {
		t.Fatalf("unknown = %v", unknown)
	}
}

func TestSpelled(t *testing.T) {
	file := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(file, []byte("bogusKey=1\nlistenPort=10911\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Spelled([]string{"zzz", "overlaykey", "boguskey"}, file, map[string]string{"overlayKey": "x"})
	if want := []string{"bogusKey", "overlayKey", "zzz"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Spelled = %v, want %v", got, want)
	}
	if got := Spelled(nil, file); got != nil {
		t.Fatalf("Spelled(nil) = %v", got)
	}
	if got := Spelled([]string{"boguskey"}, filepath.Join(t.TempDir(), "missing.conf")); !reflect.DeepEqual(got, []string{"boguskey"}) {
		t.Fatalf("without the file: %v", got)
	}
}

func TestBadValue(t *testing.T) {
	c := sample{}
	if _, err := Load(&c, Source{Overrides: map[string]string{"listenPort": "abc"}}); err == nil {
		t.Fatal("want error")
	}
}

func TestPropertiesRoundTrip(t *testing.T) {
	c := sample{ListenPort: 9876, BrokerName: "a b", Scan: time.Second}
	m, err := ParseProperties([]byte(Properties(&c)))
	if err != nil {
		t.Fatal(err)
	}
	if m["listenPort"] != "9876" || m["brokerName"] != "a b" || m["scanNotActiveBrokerInterval"] != "1000" {
		t.Fatalf("got %v", m)
	}
	if EnvName("listenPort") != "LISTEN_PORT" {
		t.Fatal(EnvName("listenPort"))
	}
}

func TestHiddenKeysAreSetButNotShown(t *testing.T) {
	var c struct {
		Path   string `key:"tls.server.keyPath"`
		Secret string `key:"tls.server.keyPassword" hidden:"true"`
	}
	if err := Set(&c, "tls.server.keyPassword", "s3cret"); err != nil || c.Secret != "s3cret" {
		t.Fatalf("Set: %v, %q", err, c.Secret)
	}
	m := Map(&c)
	if _, ok := m["tls.server.keyPassword"]; ok {
		t.Fatalf("hidden key shown: %v", m)
	}
	if _, ok := m["tls.server.keyPath"]; !ok {
		t.Fatalf("visible key missing: %v", m)
	}
	if strings.Contains(Properties(&c), "s3cret") {
		t.Fatal("hidden value in Properties")
	}
}

type marked struct {
	Inner
	Used   int    `key:"used"`
	Unused string `key:"unused" effect:"none"`
}

type Inner struct {
	Deep bool `key:"deep" effect:"none"`
	Kept bool `key:"kept"`
}

func TestNoEffectKeysAndSet(t *testing.T) {
	if got, want := NoEffectKeys(marked{}), []string{"deep", "unused"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("NoEffectKeys = %v, want %v", got, want)
	}
	file := filepath.Join(t.TempDir(), "x.conf")
	if err := os.WriteFile(file, []byte("USED=1\nunused=a\nbogus=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var c marked
	set, unknown, err := LoadSet(&c, Source{File: file, EnvPrefix: "X", Environ: []string{"X_KEPT=true"}, Overrides: map[string]string{"Deep": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"deep", "kept", "unused", "used"}; !reflect.DeepEqual(set, want) {
		t.Fatalf("set = %v, want %v", set, want)
	}
	if !reflect.DeepEqual(unknown, []string{"bogus"}) {
		t.Fatalf("unknown = %v", unknown)
	}
	if got, want := NoEffectSet(&c, set), []string{"deep", "unused"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("NoEffectSet = %v, want %v", got, want)
	}
	if got, want := NoEffectSet(&c, []string{"UNUSED", "unused", "Deep", "used"}), []string{"deep", "unused"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("NoEffectSet, any case = %v, want %v", got, want)
	}
	if got := NoEffectSet(&c, []string{"used", "kept"}); got != nil {
		t.Fatalf("NoEffectSet of effective keys = %v", got)
	}
}

func TestAnnotatedProperties(t *testing.T) {
	c := marked{Used: 3, Unused: "x"}
	got := AnnotatedProperties(&c)
	want := NoEffectComment + "\ndeep=false\nkept=false\n" + NoEffectComment + "\nunused=x\nused=3\n"
	if got != want {
		t.Fatalf("AnnotatedProperties:\n%s\nwant:\n%s", got, want)
	}
	// The key=value lines are Properties' lines, and the text parses to
	// the same map.
	var lines []string
	for _, l := range strings.Split(got, "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if strings.Join(lines, "\n") != Properties(&c) {
		t.Fatalf("key=value lines differ from Properties:\n%s", got)
	}
	m, err := ParseProperties([]byte(got))
	if err != nil || !reflect.DeepEqual(m, Map(&c)) {
		t.Fatalf("parsed %v (%v), want %v", m, err, Map(&c))
	}
}
