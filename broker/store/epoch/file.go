package epoch

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// The epoch file is text, as Apache's CheckpointFile writes it: the entry
// count, the CRC32 of the entry lines (each with its newline) as a signed
// 32-bit decimal (0: unchecked), then one "<epoch>-<startOffset>" line per
// entry. Before each rewrite the current file is kept as <file>.bak; a
// reader that finds the file missing, empty or failing its checks reads the
// .bak instead.

// Encode renders entries in the file format.
func Encode(entries []Entry) []byte {
	var body bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&body, "%d-%d\n", e.Epoch, e.Start)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", len(entries), int32(crc32.ChecksumIEEE(body.Bytes())))
	b.Write(body.Bytes())
	return b.Bytes()
}

// Decode parses the file format. It checks the count, the CRC (unless the
// stored CRC is 0) and the order of the entries.
func Decode(data []byte) ([]Entry, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) < 2 {
		return nil, errors.New("epoch file: missing header lines")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("epoch file: bad entry count %q", lines[0])
	}
	crc, err := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("epoch file: bad checksum %q", lines[1])
	}
	rows := lines[2:]
	if len(rows) != n {
		return nil, fmt.Errorf("epoch file: %d entries, header says %d", len(rows), n)
	}
	var body bytes.Buffer
	entries := make([]Entry, 0, n)
	for _, row := range rows {
		body.WriteString(row)
		body.WriteByte('\n')
		e, err := parseEntry(row)
		if err != nil {
			return nil, err
		}
		if k := len(entries); k > 0 && (e.Epoch <= entries[k-1].Epoch || e.Start < entries[k-1].Start) {
			return nil, fmt.Errorf("epoch file: entry %q out of order", row)
		}
		entries = append(entries, e)
	}
	if crc != 0 && int32(crc32.ChecksumIEEE(body.Bytes())) != int32(crc) {
		return nil, errors.New("epoch file: checksum mismatch")
	}
	return entries, nil
}

func parseEntry(row string) (Entry, error) {
	ep, st, ok := strings.Cut(strings.TrimSpace(row), "-")
	if !ok {
		return Entry{}, fmt.Errorf("epoch file: bad entry %q", row)
	}
	e, err1 := strconv.ParseInt(ep, 10, 32)
	s, err2 := strconv.ParseInt(st, 10, 64)
	if err1 != nil || err2 != nil || e < 0 || s < 0 {
		return Entry{}, fmt.Errorf("epoch file: bad entry %q", row)
	}
	return Entry{Epoch: int32(e), Start: s}, nil
}

// load reads path, falling back to path.bak. A missing pair is an empty
// list; a present but unreadable pair is an error (the replica must not
// guess its history).
func load(fsys vfs.FS, path string) ([]Entry, error) {
	main, errMain := readFile(fsys, path)
	if errMain == nil && len(main) > 0 {
		entries, err := Decode(main)
		if err == nil {
			return entries, nil
		}
		errMain = err
	}
	bak, errBak := readFile(fsys, path+".bak")
	if errBak == nil && len(bak) > 0 {
		entries, err := Decode(bak)
		if err != nil {
			return nil, fmt.Errorf("%s and its .bak are unreadable: %v; %w", path, errMain, err)
		}
		return entries, nil
	}
	if (errMain == nil || errors.Is(errMain, fs.ErrNotExist)) && (errBak == nil || errors.Is(errBak, fs.ErrNotExist)) {
		return nil, nil
	}
	if errMain != nil && !errors.Is(errMain, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, errMain)
	}
	return nil, fmt.Errorf("read %s.bak: %w", path, errBak)
}

// store writes data to path crash-safely: the current file is copied to
// .bak, data goes to a temporary file that is synced and renamed over
// path, and the directory is synced.
func store(fsys vfs.FS, path string, data []byte) error {
	if old, err := readFile(fsys, path); err == nil && len(old) > 0 {
		if err := writeSynced(fsys, path+".bak", old); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := writeSynced(fsys, tmp, data); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(dirOf(path)); err != nil {
		return fmt.Errorf("sync directory of %s: %w", path, err)
	}
	return nil
}

func writeSynced(fsys vfs.FS, path string, data []byte) error {
	f, err := fsys.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

func readFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "."
}
