package jsonfile

import (
	"encoding/json"
	"log/slog"
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

func TestRead(t *testing.T) {
	const absent = "<absent>"
	for _, tc := range []struct {
		name         string
		file, backup string // absent writes no such file
		found        bool
		want         string
		warned, fail bool
	}{
		{"neither file", absent, absent, false, "", false, false},
		{"the file", `{"v":"main"}`, `{"v":"bak"}`, true, "main", false, false},
		{"empty file, the backup", " \n", `{"v":"bak"}`, true, "bak", true, false},
		{"corrupt file, the backup", `{"v":`, `{"v":"bak"}`, true, "bak", true, false},
		{"only the backup", absent, `{"v":"bak"}`, true, "bak", true, false},
		{"both corrupt", `{`, ``, false, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json")
			for p, content := range map[string]string{path: tc.file, path + ".bak": tc.backup} {
				if content == absent {
					continue
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var logged strings.Builder
			log := slog.New(slog.NewTextHandler(&logged, nil))
			var got struct{ V string }
			found, err := Read(path, "t.json", log, func(b []byte) error { return json.Unmarshal(b, &got) })
			if (err != nil) != tc.fail || found != tc.found || got.V != tc.want {
				t.Fatalf("found %v, v %q, err %v; want found %v, v %q, error %v", found, got.V, err, tc.found, tc.want, tc.fail)
			}
			if warned := strings.Contains(logged.String(), "t.json unreadable, loaded the backup"); warned != tc.warned {
				t.Fatalf("warned %v, want %v: %q", warned, tc.warned, logged.String())
			}
		})
	}
}
