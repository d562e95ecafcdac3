package admin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Property is one key=value entry of a properties text.
type Property struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Properties is a properties text decoded in order of appearance (a key
// seen again replaces the earlier value in place).
type Properties []Property

// Get returns a key's value.
func (p Properties) Get(key string) (string, bool) {
	for _, kv := range p {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// Map returns the entries as a map.
func (p Properties) Map() map[string]string {
	m := make(map[string]string, len(p))
	for _, kv := range p {
		m[kv.Key] = kv.Value
	}
	return m
}

// ParseProperties decodes a Java properties text (java.util.Properties.load
// syntax: '#'/'!' comments, '=', ':' or blank separators, backslash escapes
// and line continuations). The bodies of GET_BROKER_CONFIG and
// GET_NAMESRV_CONFIG are such texts. Input is read as UTF-8.
func ParseProperties(text string) Properties {
	var out Properties
	index := map[string]int{}
	lines := logicalLines(text)
	for _, line := range lines {
		key, value := splitProperty(line)
		key, value = unescapeProperty(key), unescapeProperty(value)
		if i, ok := index[key]; ok {
			out[i].Value = value
			continue
		}
		index[key] = len(out)
		out = append(out, Property{Key: key, Value: value})
	}
	return out
}

func isPropBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// logicalLines joins continued lines and drops blank and comment lines; the
// results keep their escapes.
func logicalLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	natural := strings.Split(text, "\n")
	var out []string
	var cur strings.Builder
	continuing := false
	for _, l := range natural {
		i := 0
		for i < len(l) && isPropBlank(l[i]) {
			i++
		}
		l = l[i:]
		if !continuing {
			if l == "" || l[0] == '#' || l[0] == '!' {
				continue
			}
		}
		// An odd number of trailing backslashes continues the line.
		n := 0
		for n < len(l) && l[len(l)-1-n] == '\\' {
			n++
		}
		if n%2 == 1 {
			cur.WriteString(l[:len(l)-1])
			continuing = true
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
		continuing = false
	}
	if continuing && cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// blank, then skips blanks and one separator.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || isPropBlank(c) {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key = line[:i]
	j := i
	for j < len(line) && isPropBlank(line[j]) {
		j++
	}
	if j < len(line) && (line[j] == '=' || line[j] == ':') {
		j++
		for j < len(line) && isPropBlank(line[j]) {
			j++
		}
	}
	return key, line[j:]
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c != '\\' {
				b.WriteByte(c)
			}
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// FormatProperties renders entries as a properties text, keys sorted, with
// the escapes java.util.Properties.load undoes (the Java tool sends values
// raw, which mangles backslashes; escaping keeps them).
func FormatProperties(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(escapeProperty(k, true))
		b.WriteByte('=')
		b.WriteString(escapeProperty(m[k], false))
		b.WriteByte('\n')
	}
	return b.String()
}

func escapeProperty(s string, isKey bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case ' ':
			if isKey || i == 0 {
				b.WriteString(`\ `)
			} else {
				b.WriteByte(c)
			}
		case '=', ':', '#', '!':
			if isKey {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// validateBrokerConfig is Java's Validators.checkBrokerConfig.
func validateBrokerConfig(props map[string]string) error {
	v, ok := props["brokerPermission"]
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || !validPerm(n) {
		return fmt.Errorf("brokerPermission value: %s is invalid.", v) //nolint:staticcheck // Java's message
	}
	return nil
}

// validPerm is PermName.isValid: 0 <= perm < PERM_PRIORITY.
func validPerm(perm int) bool { return perm >= 0 && perm < 8 }
