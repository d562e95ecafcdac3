//go:build !linux

package harness

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

func groupSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
