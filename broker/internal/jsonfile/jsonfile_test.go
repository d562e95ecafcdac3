package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWritePrettyUnescapedWithBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	if err := Write(path, map[string]string{"a": "<&>"}); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, map[string]int{"b": 1}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "{\n\t\"b\": 1\n}\n" {
		t.Fatalf("file = %q", got)
	}
	bak, err := os.ReadFile(path + ".bak")
	if err != nil {
		t.Fatalf("no backup of the first write: %v", err)
	}
	if !strings.Contains(string(bak), `"a": "<&>"`) {
		t.Fatalf("backup = %q, want the first table unescaped", bak)
	}
}

func TestWriteEncodeError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	err := Write(path, map[string]any{"f": func() {}})
	if err == nil || !strings.HasPrefix(err.Error(), "encode "+path+": ") {
		t.Fatalf("err = %v, want an encode error naming the path", err)
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Fatalf("file written despite the encode error: %v", statErr)
	}
}
