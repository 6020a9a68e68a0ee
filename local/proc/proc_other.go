//go:build !linux

package proc

import "syscall"

// Attr puts a child in its own process group, so that killing the group
// reaches whatever it starts. Only Linux can also tie its life to this
// process's.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// Children is not implemented here: it reads Linux's /proc.
func Children(pid int) []int { return nil }
