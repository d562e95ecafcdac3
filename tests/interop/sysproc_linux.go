package interop

import (
	"os"
	"syscall"
)

// groupSysProcAttr puts the child in its own process group (so a timeout
// kills it with whatever it started) and kills it if the test process dies.
func groupSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills p's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
