package dynamo

import "syscall"

// sysProcAttr puts the server in its own process group, so Stop reaches any
// child it has, and asks the kernel to kill it if this process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
