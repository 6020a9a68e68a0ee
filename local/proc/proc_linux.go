// Package proc starts the local stack's helper processes (the DynamoDB
// engine, the Runtime Interface Emulator) so that none outlives its parent.
package proc

import "syscall"

// Attr puts a child in its own process group, so that killing the group
// reaches whatever it starts, and asks the kernel to kill it if this process
// dies first.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
