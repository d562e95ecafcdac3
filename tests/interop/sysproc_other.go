//go:build !linux

package interop

import (
	"os"
	"syscall"
)

// groupSysProcAttr: no process-group handling outside Linux.
func groupSysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills p only.
func killGroup(p *os.Process) error { return p.Kill() }
