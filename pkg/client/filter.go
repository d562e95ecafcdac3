package client

import (
	"slices"
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
)

// parseTags returns the tags of a TAG expression ("a || b"); nil means every
// message ("*" or blank), as Java's FilterAPI.
func parseTags(expr string) []string {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == subAll {
		return nil
	}
	var out []string
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// tagHash is the tag code brokers filter on (Java String.hashCode).
func tagHash(tag string) int32 { return message.TagHashCode(tag) }

// filterByTags keeps the messages whose TAGS is one of tags. Brokers filter
// on tag hash codes only, so clients re-check the tag itself (Java's
// PullAPIWrapper does the same). It filters in place.
func filterByTags(msgs []*message.Message, tags []string) []*message.Message {
	if len(tags) == 0 {
		return msgs
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if slices.Contains(tags, m.Tags()) {
			kept = append(kept, m)
		}
	}
	clear(msgs[len(kept):]) // drop references to filtered messages
	return kept
}
