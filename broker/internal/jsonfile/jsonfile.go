// Package jsonfile writes the broker's JSON tables (topics.json,
// subscriptionGroup.json, topicQueueMapping.json) the way Java does.
package jsonfile

import (
	"bytes"
	"encoding/json"
	"fmt"

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
