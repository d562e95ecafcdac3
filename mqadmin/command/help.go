package command

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help in the layout of the Java tool (commons-cli HelpFormatter):
//
//	usage: mqadmin topicRoute [-h] [-l] [-n <arg>] -t <arg>
//	 -h,--help                Print help
//	 -l,--list                Use list format to print data
//	 ...

func (a *app) help(cmd *cobra.Command, _ []string) {
	if !cmd.HasParent() {
		a.printCommandList(cmd.OutOrStdout())
		return
	}
	writeUsage(cmd.OutOrStdout(), cmd)
}

func (a *app) usage(cmd *cobra.Command) error {
	if !cmd.HasParent() {
		a.printCommandList(cmd.OutOrStderr())
		return nil
	}
	writeUsage(cmd.OutOrStderr(), cmd)
	return nil
}

type helpOpt struct {
	key      string // sort key: Java short name, else long name
	syntax   string // "-t <arg>" for the usage line
	left     string // " -t,--topic <arg>"
	usage    string
	required bool
}

func commandOpts(cmd *cobra.Command) []helpOpt {
	var opts []helpOpt
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if seen[f.Name] || f.Hidden {
			return
		}
		seen[f.Name] = true
		short := javaShort(f)
		arg := ""
		if f.NoOptDefVal == "" {
			arg = " <arg>"
		}
		o := helpOpt{key: strings.ToLower(short), usage: f.Usage}
		if short == "" {
			o.key = strings.ToLower(f.Name)
			o.syntax = "--" + f.Name + arg
			o.left = "    --" + f.Name + arg
		} else {
			o.syntax = "-" + short + arg
			o.left = " -" + short + ",--" + f.Name + arg
		}
		if v := f.Annotations[cobra.BashCompOneRequiredFlag]; len(v) > 0 && v[0] == "true" {
			o.required = true
		}
		opts = append(opts, o)
	}
	cmd.InitDefaultHelpFlag()
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	sort.SliceStable(opts, func(i, j int) bool { return opts[i].key < opts[j].key })
	return opts
}

func writeUsage(w io.Writer, cmd *cobra.Command) {
	opts := commandOpts(cmd)
	var line strings.Builder
	line.WriteString("usage: mqadmin " + cmd.Name())
	width := 0
	for _, o := range opts {
		if o.required {
			line.WriteString(" " + o.syntax)
		} else {
			line.WriteString(" [" + o.syntax + "]")
		}
		width = max(width, len(o.left))
	}
	fmt.Fprintln(w, line.String())
	for _, o := range opts {
		fmt.Fprintf(w, "%-*s   %s\n", width, o.left, o.usage)
	}
	if cmd.Long != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.Long)
	}
}
