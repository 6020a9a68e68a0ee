//go:build !linux

package dynamo

import "syscall"

// sysProcAttr puts the server in its own process group, so Stop reaches any
// child it has. Only Linux can also tie its life to this process's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
