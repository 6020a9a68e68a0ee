package main

import (
	"os/signal"
	"syscall"
	"unsafe"
)

// foreground puts this process in a process group of its own and makes it
// the terminal's foreground group, so that Ctrl-C sends SIGINT here alone
// and not to make (or a shell's pipeline) around it: make, which on SIGINT
// stops and kills itself by the same signal whatever its child did, then
// sees an ordinary exit 0. restore gives the terminal back to the group
// that had it. Without a terminal, or when this process is not in its
// foreground group, it changes nothing.
func foreground() (restore func()) {
	const tty = 0
	var was int32
	if ioctl(tty, syscall.TIOCGPGRP, &was) != nil || int(was) != syscall.Getpgrp() {
		return func() {}
	}
	// A background group that sets the terminal's group gets SIGTTOU.
	signal.Ignore(syscall.SIGTTOU)
	if syscall.Setpgid(0, 0) != nil {
		return func() {}
	}
	me := int32(syscall.Getpid()) //nolint:gosec // G115: a pid fits the kernel's pid_t, an int32 (pid_max is at most 2^22)
	if ioctl(tty, syscall.TIOCSPGRP, &me) != nil {
		_ = syscall.Setpgid(0, int(was)) // best effort back into the terminal's group; failing that, it runs on in its own
		return func() {}
	}
	return func() { _ = ioctl(tty, syscall.TIOCSPGRP, &was) } // at exit: a terminal that will not take its group back leaves no one to tell
}

func ioctl(fd int, req uint, pgrp *int32) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(pgrp))); e != 0 { //nolint:gosec // G103: audited: pgrp points at an int32, the kernel's pid_t, and lives through the call
		return e
	}
	return nil
}
