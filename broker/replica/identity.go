package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/internal/fsutil"
)

// Identity is what the brokerIdentity file holds: the controller id this
// replica was given, for its cluster and broker name. During registration
// brokerIdentity-temp holds the id being applied for and its check code
// ("<brokerAddr>;<unixMillis>"), so a crash between the two steps resumes
// with the same id.
type Identity struct {
	ClusterName  string
	BrokerName   string
	ControllerID int64
	CheckCode    string // temp file only
}

func (id Identity) encode(temp bool) []byte {
	s := fmt.Sprintf("%s#%s#%d", id.ClusterName, id.BrokerName, id.ControllerID)
	if temp {
		s += "#" + id.CheckCode
	}
	return []byte(s)
}

func parseIdentity(data string, temp bool) (Identity, error) {
	want := 3
	if temp {
		want = 4
	}
	parts := strings.SplitN(strings.TrimSpace(data), "#", want)
	if len(parts) != want {
		return Identity{}, fmt.Errorf("broker identity %q: want %d '#'-separated fields", data, want)
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || id <= 0 {
		return Identity{}, fmt.Errorf("broker identity %q: bad controller id", data)
	}
	out := Identity{ClusterName: parts[0], BrokerName: parts[1], ControllerID: id}
	if temp {
		out.CheckCode = parts[3]
	}
	return out, nil
}

// IdentityFiles reads and writes brokerIdentity and brokerIdentity-temp.
type IdentityFiles struct {
	Path string // brokerIdentity; the temp file is Path + "-temp"
}

func (f IdentityFiles) temp() string { return f.Path + "-temp" }

// Load returns the identity, ok=false when the file does not exist.
func (f IdentityFiles) Load() (Identity, bool, error) { return f.load(f.Path, false) }

// LoadTemp returns the registration in progress, ok=false when none.
func (f IdentityFiles) LoadTemp() (Identity, bool, error) { return f.load(f.temp(), true) }

func (f IdentityFiles) load(path string, temp bool) (Identity, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	id, err := parseIdentity(string(data), temp)
	if err != nil {
		return Identity{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return id, true, nil
}

// SaveTemp records an id being applied for.
func (f IdentityFiles) SaveTemp(id Identity) error {
	return fsutil.WriteFileAtomic(f.temp(), id.encode(true), false)
}

// Commit writes the identity and removes the temp file.
func (f IdentityFiles) Commit(id Identity) error {
	if err := fsutil.WriteFileAtomic(f.Path, id.encode(false), false); err != nil {
		return err
	}
	return f.DropTemp()
}

// DropTemp removes the temp file (an application that failed).
func (f IdentityFiles) DropTemp() error {
	if err := os.Remove(f.temp()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", f.temp(), err)
	}
	return syncDir(filepath.Dir(f.Path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
