package auth

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStoreSurvivesTornFile: the file is replaced atomically with the
// previous version kept as .bak (jsonfile.Write); a file torn by a crash
// of the disk or a hand edit loads the backup, one change behind, and a
// file that is gone with its backup is an empty store.
func TestStoreSurvivesTornFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	st, err := OpenStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(Config{}, st, nil)
	for _, u := range []string{"alice", "bob"} {
		if err := svc.CreateUser(User{Username: u, Password: "pw-" + u}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	st2, err := OpenStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := st2.User("alice"); !ok || u.Password != "pw-alice" {
		t.Fatalf("alice from the backup: %+v %v", u, ok)
	}
	if _, ok := st2.User("bob"); ok {
		t.Fatal("bob is only in the torn file")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + ".bak"); err != nil {
		t.Fatal(err)
	}
	st3, err := OpenStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st3.Users("")) != 0 {
		t.Fatal("users without a file")
	}
}

// TestStoreRejectsBadEntries: a file whose ACL does not parse is an error
// at start (the broker does not start with half its ACLs).
func TestStoreRejectsBadEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	bad := `{"users":[{"username":"a","password":"p"}],"acls":[{"subject":"User:a","policies":[{"entries":[{"resource":"Queue:x","actions":["Pub"],"decision":"Allow"}]}]}]}`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(path, nil); err == nil {
		t.Fatal("a bad ACL loaded")
	}
}

// TestStoreConcurrentReadersAndWriters: requests read users and ACLs while
// admin requests change them (run with -race).
func TestStoreConcurrentReadersAndWriters(t *testing.T) {
	st, err := OpenStore(filepath.Join(t.TempDir(), "auth.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := NewService(Config{AuthorizationEnabled: true}, st, nil)
	if err := svc.CreateUser(User{Username: "alice", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	r, _ := ParseResource("Topic:T*")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			d := Allow
			if i%2 == 1 {
				d = Deny
			}
			if err := svc.PutACL(&ACL{Subject: "User:alice", Policies: []Policy{{Type: PolicyCustom, Entries: []Entry{{Resource: r, Actions: []Action{ActPub}, Decision: d}}}}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	checks := []Check{{Resource: TopicResource("T1"), Actions: []Action{ActPub}}}
	for {
		select {
		case <-done:
			// The last write was a Deny.
			if _, err := svc.Authorize(Request{Username: "alice", HasUser: true, SourceIP: "127.0.0.1", RPCCode: "10"}, checks); err == nil {
				t.Fatal("the last write (Deny) is not in effect")
			}
			return
		default:
			_, _ = svc.Authorize(Request{Username: "alice", HasUser: true, SourceIP: "127.0.0.1", RPCCode: "10"}, checks)
			_ = st.ACLs("", "T")
		}
	}
}
