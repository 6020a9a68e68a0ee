package dynamolocal

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// helperEnv makes this program the engine's helper in its namespace
// (init): its value is the engine's port, its arguments the java command.
const helperEnv = "DYNAMOLOCAL_NAMESPACE_HELPER"

func init() {
	if port := os.Getenv(helperEnv); port != "" {
		os.Exit(helper(port))
	}
}

// runIsolated starts the engine in a network namespace of its own, behind
// a forwarder listening on addr. The namespace's helper is this program
// again (/proc/self/exe, in init's helper mode): it brings the namespace's
// loopback up, runs java there, and for each connection the forwarder
// accepts, connects to the engine inside and hands the connection back
// over a socket pair, which crosses namespaces as any open file does. An
// error wrapping errNoNamespace says that no namespace could be had, and
// nothing was started.
func (e *Engine) runIsolated(java, jar string, args []string, addr string, w io.Writer) error {
	network := "tcp"
	if host, _, _ := net.SplitHostPort(addr); net.ParseIP(host).To4() != nil {
		network = "tcp4" // 0.0.0.0 is every IPv4 address, not IPv6's too
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	ctl, child, err := controlPair()
	if err != nil {
		_ = ln.Close() // nothing was started on it
		return fmt.Errorf("%w (a socket pair: %w)", errNoNamespace, err)
	}
	defer func() { _ = child.Close() }() // the helper's end, closed below once it has its copy; this is for the paths that fail first
	for _, attr := range namespaceAttrs() {
		cmd := command(jar, "/proc/self/exe", append([]string{java}, args...), w)
		cmd.SysProcAttr = attr
		cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(e.Port))
		cmd.ExtraFiles = []*os.File{child}
		err = e.run(cmd)
		if err == nil {
			break
		}
	}
	if err == nil {
		_ = child.Close() // the helper has its copy: its exit must end the pair
		err = helperReady(ctl)
		if err != nil {
			kill(e.pid)
			<-e.exited
			e.exited = make(chan struct{}) // for the engine started instead
		}
	}
	if err != nil {
		_, _ = ln.Close(), ctl.Close() // nothing is served on them
		return fmt.Errorf("%w (%w)", errNoNamespace, err)
	}
	e.Listens = ln.Addr().String()
	e.fwd = &forwarder{ln: ln, ctl: ctl, conns: map[net.Conn]bool{}}
	go e.fwd.serve()
	return nil
}

// namespaceAttrs are the ways to start the helper in a network namespace
// of its own, to try in turn: as root, a network namespace alone (it needs
// CAP_SYS_ADMIN, which a container may lack); otherwise, or then, with a
// user namespace of its own too, in which the helper is root and may bring
// its loopback up, as `unshare -rn` does.
func namespaceAttrs() []*syscall.SysProcAttr {
	user := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	if os.Geteuid() != 0 {
		return []*syscall.SysProcAttr{user}
	}
	return []*syscall.SysProcAttr{{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWNET}, user}
}

// controlPair is a connected pair of Unix sockets: this process's end, and
// the file the helper gets as its descriptor 3.
func controlPair() (*net.UnixConn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	mine := os.NewFile(uintptr(fds[0]), "dynamolocal control")
	defer func() { _ = mine.Close() }() // FileConn has its own copy of the descriptor
	c, err := net.FileConn(mine)
	if err != nil {
		_ = syscall.Close(fds[1]) // the pair is of no use
		return nil, nil, err
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "dynamolocal control (helper)"), nil
}

// helperReady reads the helper's first word: 'R' once its loopback is up,
// or 'E' and why not.
func helperReady(ctl *net.UnixConn) error {
	if err := ctl.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	defer func() { _ = ctl.SetReadDeadline(time.Time{}) }() // the forwarder sets its own
	b := make([]byte, 1)
	if _, err := ctl.Read(b); err != nil {
		return fmt.Errorf("the helper said nothing: %w", err)
	}
	if b[0] == 'R' {
		return nil
	}
	why, _ := io.ReadAll(io.LimitReader(ctl, 512)) // then it exits
	return errors.New(strings.TrimSpace(string(why)))
}

// helper is this program as the engine's helper, inside the namespace: it
// brings the loopback up, says 'R' (or 'E' and why not), runs the java
// command of its arguments in a process group of its own, answers the
// forwarder's requests for connections, and exits as java does. A SIGTERM
// is passed on to java's group, and a SIGKILL follows 5 seconds later.
func helper(port string) int {
	f := os.NewFile(3, "control")
	c, err := net.FileConn(f)
	_ = f.Close() // FileConn has its own copy of the descriptor
	if err != nil {
		fmt.Fprintln(os.Stderr, "dynamolocal helper:", err)
		return 1
	}
	ctl := c.(*net.UnixConn)
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(ctl, "E%v\n", err)
		return 1
	}
	if _, err := ctl.Write([]byte{'R'}); err != nil { // the parent is gone, or will give up on this helper
		fmt.Fprintln(os.Stderr, "dynamolocal helper:", err)
		return 1
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...) //nolint:gosec // G204: the java command of its parent, this same program
	cmd.Env = slicesWithout(os.Environ(), helperEnv+"=")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// init runs on the main thread, which lives as long as this process:
	// java is killed when this process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "dynamolocal helper:", err)
		return 127
	}
	go passOnSignals(cmd.Process.Pid)
	go serveConnections(ctl, port)
	_ = cmd.Wait() // its exit code, read next, is the answer
	if code := cmd.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	return 1
}

// passOnSignals sends java's group a SIGTERM when this process gets one,
// and a SIGKILL 5 seconds later.
func passOnSignals(pid int) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	<-sigs
	_ = syscall.Kill(-pid, syscall.SIGTERM) // fails only for a group already gone
	time.Sleep(5 * time.Second)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// serveConnections answers each request byte on ctl with a connection to
// the engine on the namespace's loopback ('C' and its descriptor), or 'N'
// while the engine does not answer. A failed write on ctl is the
// forwarder gone, which the next read sees; the forwarder, missing its
// answer, times out.
func serveConnections(ctl *net.UnixConn, port string) {
	b := make([]byte, 1)
	for {
		if _, err := ctl.Read(b); err != nil {
			return // the forwarder is gone
		}
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 2*time.Second) //nolint:gosec // G704: the engine's own port on the namespace's loopback
		if err != nil {
			_, _ = ctl.Write([]byte{'N'})
			continue
		}
		f, err := c.(*net.TCPConn).File()
		_ = c.Close() // File has its own copy of the descriptor
		if err != nil {
			_, _ = ctl.Write([]byte{'N'})
			continue
		}
		_, _, _ = ctl.WriteMsgUnix([]byte{'C'}, syscall.UnixRights(int(f.Fd())), nil)
		_ = f.Close() // sent: the forwarder has its copy
	}
}

// loopbackUp brings up the namespace's lo, which a new network namespace
// has down.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring up the namespace's loopback: %w", err)
	}
	defer func() { _ = syscall.Close(fd) }() // a socket for the ioctl alone

	var ifr struct { // struct ifreq: a name, then a union of which the flags are the first 2 bytes
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	for _, req := range []uintptr{syscall.SIOCGIFFLAGS, syscall.SIOCSIFFLAGS} {
		if req == syscall.SIOCSIFFLAGS {
			ifr.flags |= syscall.IFF_UP
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&ifr))); errno != 0 { //nolint:gosec // G103: audited: ifr is laid out as the kernel's struct ifreq, and lives through the call
			return fmt.Errorf("bring up the namespace's loopback: %w", errno)
		}
	}
	return nil
}

// slicesWithout is env without the variables that start with prefix.
func slicesWithout(env []string, prefix string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}
