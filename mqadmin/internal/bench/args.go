package bench

import (
	"strconv"
	"strings"
)

// JavaBool is a boolean option with a required value, parsed like Java's
// Boolean.parseBoolean ("true" in any case is true, anything else false):
// Apache's tools take "-k true", not a bare "-k".
type JavaBool bool

func (b *JavaBool) String() string { return strconv.FormatBool(bool(*b)) }

// Set parses the value; it never fails, as parseBoolean never does.
func (b *JavaBool) Set(s string) error {
	*b = JavaBool(strings.EqualFold(strings.TrimSpace(s), "true"))
	return nil
}

// Type names the value in help output.
func (b *JavaBool) Type() string { return "true|false" }

// NormalizeArgs rewrites Java-style options that pflag cannot parse:
// multi-letter short options ("-ri 5000", "-ak=x", keys of multi) become
// their long form, and single-dash long options ("-topic T", as
// commons-cli accepts) become "--topic". Values following an option are
// never rewritten unless they look like one of these options.
func NormalizeArgs(args []string, multi map[string]string, longs []string) []string {
	isLong := make(map[string]bool, len(longs))
	for _, l := range longs {
		isLong[l] = true
	}
	out := make([]string, 0, len(args))
	for i, t := range args {
		if t == "--" {
			return append(out, args[i:]...)
		}
		if len(t) > 2 && t[0] == '-' && t[1] != '-' {
			name, val, hasVal := strings.Cut(t[1:], "=")
			long, ok := multi[name]
			if !ok && len(name) > 1 && isLong[name] {
				long, ok = name, true
			}
			if ok {
				t = "--" + long
				if hasVal {
					t += "=" + val
				}
			}
		}
		out = append(out, t)
	}
	return out
}
