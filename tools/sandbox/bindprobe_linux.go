package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/troupe-ai/troupe/internal/procsec"
)

// A launcher in a user namespace of its own binds the read-only trees
// with the capabilities it holds there; where it holds none that count
// (ambient capabilities missing, as a bug once had it, or a kernel or
// security module that grants none in such a namespace) its bind fails,
// and since it cannot tell us (its stderr is the command's), it would
// fall back to Landlock's split grants in silence. So before the first
// such launcher, this process starts one that must bind and fails when
// it cannot; a failure is said (noteFallback) and such launchers are then
// started without a mount namespace, splitting the grants from the start.

// launcherCapsOff is a test hook: launchers in a user namespace get no
// ambient capabilities, so a user other than root cannot bind there.
var launcherCapsOff bool

// launcherBinds is nil when a launcher in a new user namespace can bind
// a tree read-only, else why not; it asks once per process.
var launcherBinds = sync.OnceValue(probeLauncherBinds)

func probeLauncherBinds() error {
	dir, err := os.MkdirTemp("", "troupe-bind-probe-")
	if err != nil {
		return fmt.Errorf("make the probe's folder: %w", err)
	}
	defer os.RemoveAll(dir)
	hole := filepath.Join(dir, "ro")
	if err := os.Mkdir(hole, 0o700); err != nil {
		return fmt.Errorf("make the probe's folder: %w", err)
	}
	path, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("no `true` program to probe with: %w", err)
	}
	raw, err := json.Marshal(payload{Policy: Policy{Writable: []string{dir}, ReadOnly: []string{hole}, Network: NetworkAllow},
		InMountNS: true, MustBind: true})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := &exec.Cmd{Path: selfExe, Args: []string{launcherArg0, path, path}, Env: []string{policyEnv + "=" + string(raw)},
		Stdout: &out, Stderr: &out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		AmbientCaps: launcherCaps(false, true)}
	if err := procsec.WhileDumpable(cmd.Run); err != nil {
		return fmt.Errorf("a launcher in a user namespace of its own could not bind a tree read-only: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}
