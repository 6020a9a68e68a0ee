package dynamolocal

import "syscall"

// sysProcAttr puts the engine in its own process group, so that stopping
// the group reaches whatever the JVM starts, and has the kernel kill it when
// the thread that started it ends: start keeps that thread for the engine's
// life, so it ends only with the process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// A signal fails only for a group already gone (ESRCH): Stop waits for
// exited either way.
func terminate(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }
func kill(pid int)      { _ = syscall.Kill(-pid, syscall.SIGKILL) }
