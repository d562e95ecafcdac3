package commitlog

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Config)
		want string // substring of the error; "" for valid
	}{
		{"default", func(*Config) {}, ""},
		{"no dir", func(c *Config) { c.Dir = "" }, "Dir"},
		{"tiny file", func(c *Config) { c.FileSize = 100 }, "FileSize"},
		{"record > file", func(c *Config) { c.FileSize = 4096; c.MaxBatchBytes = 8 << 20 }, "MaxRecordSize"},
		{"bad flush type", func(c *Config) { c.FlushDiskType = 7 }, "FlushDiskType"},
		{"zero interval", func(c *Config) { c.FlushInterval = 0 }, "FlushInterval"},
		{"bad deleteWhen", func(c *Config) { c.DeleteWhen = "25" }, "DeleteWhen"},
		{"empty deleteWhen", func(c *Config) { c.DeleteWhen = ";" }, "DeleteWhen"},
		{"ratio", func(c *Config) { c.DiskMaxUsedSpaceRatio = 99 }, "DiskMaxUsedSpaceRatio"},
		{"batch < record", func(c *Config) { c.MaxBatchBytes = 10 }, "MaxBatchBytes"},
		{"reserved", func(c *Config) { c.FileReservedTime = -time.Hour }, "FileReservedTime"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig("/data/store/commitlog")
			c.mut(&cfg)
			err := cfg.Validate()
			if cfg.CheckpointPath != "" || cfg.AbortPath != "" || cfg.FS != nil || cfg.Logger != nil || cfg.Clock != nil {
				t.Fatalf("Validate filled defaults: %+v", cfg)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				d := cfg.withDefaults()
				if d.CheckpointPath != "/data/store/checkpoint" || d.AbortPath != "/data/store/abort" || d.FS == nil || d.Logger == nil || d.Clock == nil {
					t.Fatalf("defaults not filled: %+v", d)
				}
				if err := d.Validate(); err != nil {
					t.Fatalf("with defaults: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want mention of %s", err, c.want)
			}
		})
	}
	for s, want := range map[string]FlushDiskType{"ASYNC_FLUSH": AsyncFlush, "SYNC_FLUSH": SyncFlush} {
		if got, err := ParseFlushDiskType(s); err != nil || got != want || got.String() != s {
			t.Fatalf("%s: %v %v", s, got, err)
		}
	}
	if _, err := ParseFlushDiskType("x"); err == nil {
		t.Fatal("bad type accepted")
	}
}
