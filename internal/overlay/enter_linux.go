package overlay

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
)

// utilLinux is the util-linux program name found on the fixed system
// directories (never on a PATH an agent could write), or "".
func utilLinux(name string) string {
	for _, d := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

var (
	nsenter = sync.OnceValue(func() string { return utilLinux("nsenter") })
	setpriv = sync.OnceValue(func() string { return utilLinux("setpriv") })
)

// ErrNoNsenter says util-linux's nsenter was not found.
var ErrNoNsenter = errors.New("nsenter not found in /usr/bin, /bin, /usr/sbin or /sbin")

// ErrNoSetpriv says util-linux's setpriv, which root's entered commands
// need, was not found.
var ErrNoSetpriv = errors.New("setpriv not found in /usr/bin, /bin, /usr/sbin or /sbin")

// Enter is the argv prefix that runs a command inside the holder's
// namespaces with the caller's credentials, its working directory dir
// (a path as the holder's namespace has it, such as a mount point;
// --wdns, util-linux 2.38: --wd would open it before entering):
// append the program and its arguments.
func (h *Holder) Enter(dir string) ([]string, error) {
	return h.enter("--wdns=" + dir)
}

// EnterHere is the argv prefix that runs a command inside the holder's
// namespaces, with the caller's credentials, in the directory it starts
// in (its exec.Cmd's Dir, such as /proc/self/fd/N of a mount's root as
// Mount returned it): nsenter opens it before entering (--wd=.) and
// changes back into it after, so no path is looked up in the holder's
// namespace.
func (h *Holder) EnterHere() ([]string, error) {
	return h.enter("--wd=.")
}

// enter is the prefix with nsenter's working directory option wd.
//
// A process joining a user namespace gets every capability in it, and
// one whose user is root there keeps them across exec: a command root
// entered could unmount, or mount over, another worktree's overlay in
// the holder's mount namespace, which every worktree shares. So for
// root, setpriv empties the command's bounding, inheritable and ambient
// sets first: it runs as root without capabilities, as any other user's
// commands do (their exec drops what joining gave), but for
// CAP_SETFCAP, which Linux asks of whoever maps uid 0 into a new user
// namespace: the sandbox's forker makes one for the command
// (tools/sandbox, enter_linux.go). CAP_SETFCAP alone touches no mount,
// and with the bounding set holding nothing else, a file capability
// set with it grants nothing more at exec.
func (h *Holder) enter(wd string) ([]string, error) {
	bin := nsenter()
	if bin == "" {
		return nil, ErrNoNsenter
	}
	pre := []string{bin, "-t", strconv.Itoa(h.pid), "-U", "-m", "--preserve-credentials", wd, "--"}
	if os.Geteuid() == 0 {
		sp := setpriv()
		if sp == "" {
			return nil, ErrNoSetpriv
		}
		pre = append(pre, sp, "--bounding-set=-all,+setfcap", "--inh-caps=-all", "--ambient-caps=-all", "--")
	}
	return pre, nil
}

// Wrap rewrites cmd (built by exec.Command, not started) so that it
// starts inside the holder's namespaces at dir: its Path becomes
// nsenter and its Dir is dropped (nsenter's --wdns sets it). Its
// SysProcAttr must not ask for namespaces: the new ones would be made
// before nsenter joins the holder's, and it could not.
func (h *Holder) Wrap(cmd *exec.Cmd, dir string) error {
	pre, err := h.Enter(dir)
	if err != nil {
		return err
	}
	if a := cmd.SysProcAttr; a != nil && a.Cloneflags != 0 {
		return fmt.Errorf("enter overlay: command asks for namespaces of its own (%#x)", a.Cloneflags)
	}
	args := append(append(pre, cmd.Path), cmd.Args[min(1, len(cmd.Args)):]...)
	cmd.Path, cmd.Args, cmd.Dir = pre[0], args, ""
	return nil
}
