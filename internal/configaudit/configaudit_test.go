package configaudit

import (
	"slices"
	"strings"
	"testing"
)

type fixture struct {
	Used     int    `key:"used"`
	ViaHelp  string `key:"viaHelp"`
	Shown    bool   `key:"shown" effect:"none"`
	Unused   bool   `key:"unused" effect:"none"`
	Checked  int    `key:"checked" effect:"none"`
	Forgot   int    `key:"forgot"`
	Misnamed int    `key:"misnamed" effect:"none"`
}

func TestCheck(t *testing.T) {
	program, err := Scan("testdata/prog", func(dir string) bool { return dir == "config" })
	if err != nil {
		t.Fatal(err)
	}
	own, err := Scan("testdata/prog/config", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := Check(Audit{
		Fields:  Fields(fixture{}),
		Program: program,
		Config:  own,
		Inert:   func(fn string) bool { return fn == "Config.Validate" },
		Allowed: map[string][]string{"shown": {"main.go"}, "gone": {"main.go"}},
		Pending: map[string]bool{"unused": true},
	})
	want := []string{
		"Allowed names gone, which is no key",
		"forgot (Forgot) is read nowhere outside the config package: mark it effect:\"none\" or wire it",
		"misnamed is marked effect:\"none\" but Misnamed reads it at main.go:8",
		"unused: being wired elsewhere, must not be marked effect:\"none\"",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Check:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDocKeys(t *testing.T) {
	doc := "intro\n<!-- no-effect-keys:x -->\nold\n<!-- /no-effect-keys:x -->\nend\n"
	keys := []string{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "c"}
	out, err := WithDocKeys(doc, "x", keys)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DocKeys(out, "x")
	if err != nil || !slices.Equal(got, keys) {
		t.Fatalf("DocKeys = %v, %v; want %v", got, err, keys)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 100 {
			t.Errorf("line of %d characters: %q", len(l), l)
		}
	}
	if !strings.HasPrefix(out, "intro\n") || !strings.HasSuffix(out, "-->\nend\n") || strings.Contains(out, "old") {
		t.Errorf("WithDocKeys:\n%s", out)
	}
	if _, err := DocKeys("no markers", "x"); err == nil {
		t.Error("DocKeys without markers: no error")
	}
}
