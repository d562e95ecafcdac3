// Package jsonfile reads and writes the broker's JSON tables (topics.json,
// subscriptionGroup.json, topicQueueMapping.json) the way Java does.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/rmqgo/rmq/internal/fsutil"
)

// Write encodes v pretty-printed with tabs and without HTML escaping, as
// Java's JSON.toJSONString(obj, true) output, and replaces path with it
// atomically, keeping the previous file as its backup.
func Write(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "\t")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, buf.Bytes(), true); err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	return nil
}

// Read loads the table at path, or its backup when path is missing or
// does not decode (fsutil.ReadWithBackup); an empty file does not decode.
// decode parses a file's bytes into the caller's table. found is false
// when neither file exists; loading the backup is logged as a warning
// naming the table (name, e.g. "topics.json").
func Read(path, name string, log *slog.Logger, decode func([]byte) error) (found bool, err error) {
	_, from, err := fsutil.ReadWithBackup(path, func(b []byte) error {
		if len(bytes.TrimSpace(b)) == 0 {
			return errors.New("empty file")
		}
		return decode(b)
	})
	if err != nil || from == "" {
		return false, err
	}
	if from != path {
		log.Warn(name+" unreadable, loaded the backup", "file", from)
	}
	return true, nil
}
