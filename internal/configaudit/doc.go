package configaudit

import (
	"fmt"
	"regexp"
	"strings"
)

func markers(name string) (begin, end string) {
	return "<!-- no-effect-keys:" + name + " -->", "<!-- /no-effect-keys:" + name + " -->"
}

var backquoted = regexp.MustCompile("`([^`]+)`")

func block(doc, name string) (start, stop int, err error) {
	begin, end := markers(name)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return 0, 0, fmt.Errorf("configaudit: no %s … %s block", begin, end)
	}
	return i + len(begin), j, nil
}

// DocKeys returns the keys listed, each in backquotes, between the markers
// <!-- no-effect-keys:NAME --> and <!-- /no-effect-keys:NAME --> of doc,
// in order.
func DocKeys(doc, name string) ([]string, error) {
	i, j, err := block(doc, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range backquoted.FindAllStringSubmatch(doc[i:j], -1) {
		out = append(out, m[1])
	}
	return out, nil
}

// WithDocKeys returns doc with the NAME block holding keys: backquoted,
// comma-separated, in lines of at most about 100 characters.
func WithDocKeys(doc, name string, keys []string) (string, error) {
	i, j, err := block(doc, name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteByte('\n')
	line := 0
	for n, k := range keys {
		item := "`" + k + "`"
		if n < len(keys)-1 {
			item += ","
		}
		if line > 0 && line+1+len(item) > 100 {
			b.WriteByte('\n')
			line = 0
		}
		if line > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(item)
		line += len(item)
	}
	b.WriteByte('\n')
	return doc[:i] + b.String() + doc[j:], nil
}
