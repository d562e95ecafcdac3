package configaudit

import (
	"fmt"
	"os"
	"regexp"
	"slices"
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

// CheckDocFile compares the NAME block of the file at path with keys (the
// keys marked effect:"none"), rewriting the block first when update is set.
// It returns one line per difference; a list in another order is one.
func CheckDocFile(path, name string, keys []string, update bool) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return []string{`no key is marked effect:"none"`}, nil
	}
	doc := string(b)
	if update {
		if doc, err = WithDocKeys(doc, name, keys); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			return nil, err
		}
	}
	got, err := DocKeys(doc, name)
	if err != nil {
		return nil, err
	}
	if slices.Equal(got, keys) {
		return nil, nil
	}
	var problems []string
	for _, k := range keys {
		if !slices.Contains(got, k) {
			problems = append(problems, fmt.Sprintf("%s is marked effect:\"none\" but not listed in %s", k, path))
		}
	}
	for _, k := range got {
		if !slices.Contains(keys, k) {
			problems = append(problems, fmt.Sprintf("%s lists %s, which is not marked effect:\"none\"", path, k))
		}
	}
	return append(problems, "the list differs from the tags (order too): rerun the test with -update"), nil
}
