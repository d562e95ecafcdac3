package harness

import "syscall"

// sysProcAttr kills the child when the test process dies (Pdeathsig), so a
// crashed or timed-out test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// groupSysProcAttr is sysProcAttr in a new process group, so a timeout can
// kill the command together with its children (killGroup).
func groupSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
