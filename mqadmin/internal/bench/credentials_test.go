package bench

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/client"
)

// TestCredentialFlags: -a true with -ak/-sk (Apache's benchmark options and
// defaults), or --toolsConfig, sign the benchmark's clients.
func TestCredentialFlags(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yml")
	if err := os.WriteFile(tools, []byte("accessKey: fileAK\nsecretKey: fileSK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(dir, "blank.yml")
	if err := os.WriteFile(blank, []byte("accessKey: fileAK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    *client.Credentials
		wantErr bool
	}{
		{"off", nil, nil, false},
		{"keys without -a", []string{"--accessKey", "x", "--secretKey", "y"}, nil, false},
		{"-a defaults", []string{"-a", "true"}, &client.Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}, false},
		{"-a with keys", []string{"-a", "true", "--accessKey", "x", "--secretKey", "y"}, &client.Credentials{AccessKey: "x", SecretKey: "y"}, false},
		{"file", []string{"--toolsConfig", tools}, &client.Credentials{AccessKey: "fileAK", SecretKey: "fileSK"}, false},
		{"keys beat the file", []string{"--toolsConfig", tools, "--accessKey", "x", "--secretKey", "y"}, &client.Credentials{AccessKey: "x", SecretKey: "y"}, false},
		{"blank file", []string{"--toolsConfig", blank}, nil, true},
		{"missing file", []string{"--toolsConfig", filepath.Join(dir, "none.yml")}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c commonFlags
			cmd := &cobra.Command{Use: "x"}
			c.register(cmd)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			o, err := c.options(cmd, func(string) string { return "" }, io.Discard, io.Discard)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if (o.Credentials == nil) != (tc.want == nil) || o.Credentials != nil && *o.Credentials != *tc.want {
				t.Fatalf("credentials %+v, want %+v", o.Credentials, tc.want)
			}
		})
	}
}
