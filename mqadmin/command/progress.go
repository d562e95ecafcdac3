package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rmqgo/rmq/pkg/admin"
)

// stepProgress shows the steps of a static-topic plan as they are applied.
//
// Stdout always gets plain lines, "step n/m: title" and "  [k/t] what was
// done", so scripts and tests read the same text wherever they run (the
// Java tool prints nothing here; its two file lines are unchanged). When
// stderr is a terminal, each step also gets a bar there, redrawn in place
// as its units complete and left on screen once the step is done:
//
//	[##########..........] 4/8 logic queues
type stepProgress struct {
	out  io.Writer
	bar  io.Writer // nil: no bar
	open bool      // a bar is on the terminal's current line
	cur  admin.StaticStep
}

// barWidth is the number of cells of a bar.
const barWidth = 20

// clearLine returns the terminal's cursor to the start of the line and
// erases it.
const clearLine = "\r\x1b[K"

func newStepProgress(out, term io.Writer) *stepProgress {
	return &stepProgress{out: out, bar: term}
}

// step reports one event of admin.ApplyStaticTopicPlan.
func (p *stepProgress) step(s admin.StaticStep) {
	if s.Title != "" {
		p.end()
		p.cur = s
		fmt.Fprintf(p.out, "step %d/%d: %s\n", s.Step, s.Steps, s.Title)
		p.draw()
		return
	}
	if s.Line == "" {
		return
	}
	p.cur.Done, p.cur.Total = s.Done, s.Total
	if p.open {
		// The line goes above the bar (stdout and stderr may share the
		// terminal): erase the bar, print, draw it again.
		fmt.Fprint(p.bar, clearLine)
		p.open = false
	}
	if s.Total > 0 {
		fmt.Fprintf(p.out, "  [%d/%d] %s\n", s.Done, s.Total, s.Line)
	} else {
		fmt.Fprintf(p.out, "  %s\n", s.Line)
	}
	p.draw()
	if s.Total > 0 && s.Done >= s.Total {
		p.end()
	}
}

// draw shows the current step's bar (nothing without a terminal, or for a
// step with nothing to do).
func (p *stepProgress) draw() {
	if p.bar == nil || p.cur.Total <= 0 {
		return
	}
	if p.open {
		fmt.Fprint(p.bar, clearLine)
	}
	fmt.Fprint(p.bar, renderBar(p.cur.Done, p.cur.Total, p.cur.Unit))
	p.open = true
}

// end leaves the bar on screen and moves to the next line; called when a
// step completes, before the next one and when the command stops (also on
// a failure, so the error starts on a line of its own).
func (p *stepProgress) end() {
	if p.open {
		fmt.Fprintln(p.bar)
		p.open = false
	}
}

// renderBar draws "  [####......] done/total unit".
func renderBar(done, total int, unit string) string {
	done = min(max(done, 0), total)
	full := barWidth * done / total
	return fmt.Sprintf("  [%s%s] %d/%d %s", strings.Repeat("#", full), strings.Repeat(".", barWidth-full), done, total, unit)
}

// isTerminal reports whether w is a character device (a terminal); the
// progress bars are drawn only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressTerminal is where the progress bars go: stderr when it is a
// terminal that can erase lines (not TERM=dumb), else nowhere.
func (a *app) progressTerminal() io.Writer {
	if a.env.Getenv("TERM") == "dumb" || !a.env.IsTerminal(a.env.Stderr) {
		return nil
	}
	return a.env.Stderr
}
