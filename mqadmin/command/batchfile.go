package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// readConfigList reads the JSON array of configs of a batch command
// (updateTopicList, updateSubGroupList): each entry is decoded over fresh()
// so that absent fields keep Java's defaults; what names the entries in
// errors. missing reports a file that does not exist, which the Java tools
// answer with "the file path … does not exists" and success.
func readConfigList[T any](path, what string, fresh func() T) (list []T, missing bool, err error) {
	name := strings.TrimSpace(path)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	var raw []json.RawMessage
	if err := protocol.Unmarshal(data, &raw); err != nil {
		return nil, false, fmt.Errorf("%s: not a JSON array of %ss: %w", name, what, err)
	}
	list = make([]T, 0, len(raw))
	for i, r := range raw {
		v := fresh()
		if err := protocol.Unmarshal(r, &v); err != nil {
			return nil, false, fmt.Errorf("%s: %s #%d: %w", name, what, i, err)
		}
		list = append(list, v)
	}
	return list, false, nil
}
