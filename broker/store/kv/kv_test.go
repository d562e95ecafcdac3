package kv

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestLockHolderProcess is not a test: TestOpenWaitsForLock runs the test
// binary with KV_LOCK_DIR set to hold the directory lock from another
// process, as a broker that is still exiting after kill -9 does.
func TestLockHolderProcess(t *testing.T) {
	dir := os.Getenv("KV_LOCK_DIR")
	if dir == "" {
		t.Skip("helper process for TestOpenWaitsForLock (runs only with KV_LOCK_DIR set)")
	}
	db, err := Open(DefaultConfig(dir), nil)
	if err != nil {
		os.Exit(2)
	}
	os.WriteFile(dir+"/.held", nil, 0o644)
	time.Sleep(700 * time.Millisecond)
	db.Close()
	os.Exit(0)
}

// Open waits for another process to release the directory lock.
func TestOpenWaitsForLock(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), "KV_LOCK_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	for i := 0; ; i++ {
		if _, err := os.Stat(dir + "/.held"); err == nil {
			break
		}
		if i > 500 {
			t.Fatal("helper process did not take the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	db, err := Open(DefaultConfig(dir), nil)
	if err != nil {
		t.Fatalf("open while another process held the lock: %v", err)
	}
	defer db.Close()
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("opened without waiting for the other process")
	}
}
