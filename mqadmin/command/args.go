package command

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rmqgo/rmq/pkg/admin"
)

// javaShortAnnotation marks a flag whose Java short name has more than one
// letter ("qn" of updateStaticTopic, "mf" of remappingStaticTopic). pflag
// shorthands are single letters, so such flags are registered by long name
// and NormalizeArgs rewrites "-qn" to "--queueNum".
const javaShortAnnotation = "rmqgo/java-short"

// stringOpt registers a value option with Java's short and long names.
func stringOpt(fs *pflag.FlagSet, p *string, short, long, usage string) {
	if len(short) == 1 {
		fs.StringVarP(p, long, short, "", usage)
		return
	}
	fs.StringVar(p, long, "", usage)
	setJavaShort(fs, long, short)
}

// boolOpt registers a valueless option (Java hasArg=false).
func boolOpt(fs *pflag.FlagSet, p *bool, short, long, usage string) {
	if len(short) == 1 {
		fs.BoolVarP(p, long, short, false, usage)
		return
	}
	fs.BoolVar(p, long, false, usage)
	setJavaShort(fs, long, short)
}

func setJavaShort(fs *pflag.FlagSet, long, short string) {
	if short == "" {
		return
	}
	if err := fs.SetAnnotation(long, javaShortAnnotation, []string{short}); err != nil {
		panic("mqadmin: " + err.Error()) // the flag was just defined
	}
}

// javaShort returns a flag's Java short name ("" if none).
func javaShort(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return f.Shorthand
	}
	if v := f.Annotations[javaShortAnnotation]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// NormalizeArgs adapts a Java-style mqadmin command line to cobra/pflag:
//
//   - the sub-command name matches case-insensitively (as the Java tool's
//     findSubCommand) and is replaced by its canonical spelling;
//   - a single-dash token whose name is a multi-letter Java short option of
//     the chosen command ("-qn", "-qn=8") becomes "--<long>";
//   - a single-dash token that spells a long option ("-topic") becomes
//     "--topic", as commons-cli's DefaultParser accepts it.
//
// Everything else (short options, clusters like "-lt T", attached values
// like "-tTopic", option values, tokens after "--") is left alone.
func NormalizeArgs(root *cobra.Command, args []string) []string {
	out := append([]string(nil), args...)
	// Find the sub-command: the first token that is neither a flag nor the
	// value of a root flag.
	cmdIdx := -1
	for i := 0; i < len(out); i++ {
		t := out[i]
		if t == "--" {
			break
		}
		if strings.HasPrefix(t, "-") && len(t) > 1 {
			if f := multiLetterShort(root.PersistentFlags(), t); f != nil {
				out[i] = "--" + f.Name + strings.TrimPrefix(t, "-"+javaShort(f))
				t = out[i]
			}
			if takesSeparateValue(root.PersistentFlags(), t) {
				i++
			}
			continue
		}
		cmdIdx = i
		break
	}
	if cmdIdx < 0 {
		return out
	}
	var cmd *cobra.Command
	for _, c := range root.Commands() {
		if strings.EqualFold(c.Name(), out[cmdIdx]) {
			cmd = c
			break
		}
		for _, al := range c.Aliases {
			if strings.EqualFold(al, out[cmdIdx]) {
				cmd = c
			}
		}
		if cmd != nil {
			break
		}
	}
	if cmd == nil {
		return out
	}
	out[cmdIdx] = cmd.Name()

	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(root.PersistentFlags())
	multi := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) {
		if v := f.Annotations[javaShortAnnotation]; len(v) > 0 {
			multi[v[0]] = f
		}
	})

	for i := 0; i < len(out); i++ {
		if i == cmdIdx {
			continue
		}
		t := out[i]
		if t == "--" {
			break
		}
		if !strings.HasPrefix(t, "-") || len(t) < 2 {
			continue
		}
		if !strings.HasPrefix(t, "--") && len(t) > 2 {
			name, val, hasVal := strings.Cut(t[1:], "=")
			var f *pflag.Flag
			if mf, ok := multi[name]; ok {
				f = mf
			} else if lf := fs.Lookup(name); lf != nil && len(name) > 1 {
				f = lf
			}
			if f != nil {
				t = "--" + f.Name
				if hasVal {
					t += "=" + val
				}
				out[i] = t
			}
		}
		if takesSeparateValue(fs, t) {
			i++ // the next token is this option's value, whatever it looks like
		}
	}
	return out
}

// takesSeparateValue reports whether flag token t (as pflag will parse it)
// consumes the following argument as its value.
func takesSeparateValue(fs *pflag.FlagSet, t string) bool {
	if strings.HasPrefix(t, "--") {
		name := t[2:]
		if strings.Contains(name, "=") {
			return false
		}
		f := fs.Lookup(name)
		return f != nil && f.NoOptDefVal == ""
	}
	// A shorthand cluster: the first value-taking letter takes the rest of
	// the token, or the next argument when it is the last letter.
	short := t[1:]
	if strings.Contains(short, "=") {
		return false
	}
	for j := 0; j < len(short); j++ {
		f := fs.ShorthandLookup(short[j : j+1])
		if f == nil {
			return false
		}
		if f.NoOptDefVal == "" {
			return j == len(short)-1
		}
	}
	return false
}

// changedOpt parses one option's value into its destination, if the command
// line gave the option.
type changedOpt struct {
	long  string       // the option's long name
	parse func() error // parses the value into the destination
}

// parsedOpt is a changedOpt that parses val with parse (short names the
// option in parse's error) and stores the result in *dst.
func parsedOpt[T any](long, short, val string, parse func(flag, s string) (T, error), dst *T) changedOpt {
	return changedOpt{long: long, parse: func() error {
		v, err := parse(short, val)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}}
}

// parseQueryLimits parses the -b/--beginTimestamp and -e/--endTimestamp
// values (with parseLong) and the --maxNum value (short option maxShort)
// of a message query into req, those the command line gave.
func parseQueryLimits(changed func(string) bool, req *admin.QueryMessageRequest, parseLong func(flag, s string) (int64, error), begin, end, maxNum, maxShort string) error {
	return parseChanged(changed,
		parsedOpt("beginTimestamp", "b", begin, parseLong, &req.Begin),
		parsedOpt("endTimestamp", "e", end, parseLong, &req.End),
		parsedOpt("maxNum", maxShort, maxNum, javaInt, &req.MaxNum),
	)
}

// parseChanged parses, in order, the options the command line gave; the
// first error stops it, as the Java tools stop at the first bad value.
func parseChanged(changed func(string) bool, opts ...changedOpt) error {
	for _, o := range opts {
		if !changed(o.long) {
			continue
		}
		if err := o.parse(); err != nil {
			return err
		}
	}
	return nil
}

// multiLetterShort returns the flag of fs whose multi-letter Java short
// name token t spells ("-ak", "-ak=x"), or nil.
func multiLetterShort(fs *pflag.FlagSet, t string) *pflag.Flag {
	if strings.HasPrefix(t, "--") || len(t) < 3 {
		return nil
	}
	name, _, _ := strings.Cut(t[1:], "=")
	var found *pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if v := f.Annotations[javaShortAnnotation]; len(v) > 0 && v[0] == name {
			found = f
		}
	})
	return found
}
