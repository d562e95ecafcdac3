package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/rmqgo/rmq/pkg/admin"
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

// submitConfigList is the run of the batch commands (updateTopicList,
// updateSubGroupList), with the Java tools' messages: the list in file goes
// to every address targets names in one request each (send), a line per
// address saying "submit batch of <what> to <addr> success". A missing file
// is a message, not a failure; an empty list does nothing.
func submitConfigList[T any](a *app, file, kind string, fresh func() T,
	targets func(c *admin.Client) (addrs []string, what string, err error),
	send func(c *admin.Client, addr string, list []T) error,
) error {
	list, missing, err := readConfigList(file, kind, fresh)
	if missing {
		fmt.Fprintf(a.env.Stdout, "the file path %s does not exists\n", strings.TrimSpace(file))
		return nil
	}
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return nil
	}
	return a.withClient(func(c *admin.Client) error {
		addrs, what, err := targets(c)
		if err != nil {
			return err
		}
		for _, addr := range addrs {
			if err := send(c, addr, list); err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stdout, "submit batch of %s to %s success, please check the result later.\n", what, addr)
		}
		return nil
	})
}
