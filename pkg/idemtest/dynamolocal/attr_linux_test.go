package dynamolocal_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/idemkeys/idem/pkg/idemtest/dynamolocal"
)

// probeEnv makes the test binary the probe of namespaces (TestMain).
const probeEnv = "DYNAMOLOCAL_PROBE"

// probe is what the test binary does as the probe: in its new namespace,
// what the engine's helper does first.
func probe() int {
	if dynamolocal.LoopbackUp() != nil {
		return 1
	}
	return 0
}

// namespaces says whether this machine gives a process a network namespace
// of its own in which it may bring the loopback up, as Start asks for one:
// as root, or with a user namespace in which it is root.
func namespaces(t *testing.T) bool {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []uintptr{syscall.CLONE_NEWNET, syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), probeEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
		if flags&syscall.CLONE_NEWUSER != 0 {
			cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
			cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		}
		if cmd.Run() == nil {
			return true
		}
	}
	return false
}
