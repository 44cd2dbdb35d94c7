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

// nsenter is util-linux's nsenter, found on the fixed system directories
// (never on a PATH an agent could write).
var nsenter = sync.OnceValue(func() string {
	for _, d := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		p := filepath.Join(d, "nsenter")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
})

// ErrNoNsenter says util-linux's nsenter was not found.
var ErrNoNsenter = errors.New("nsenter not found in /usr/bin, /bin, /usr/sbin or /sbin")

// Enter is the argv prefix that runs a command inside the holder's
// namespaces with the caller's credentials, its working directory dir
// (a path as the holder's namespace has it, such as a mount point;
// --wdns, util-linux 2.38: --wd would open it before entering):
// append the program and its arguments.
func (h *Holder) Enter(dir string) ([]string, error) {
	bin := nsenter()
	if bin == "" {
		return nil, ErrNoNsenter
	}
	return []string{bin, "-t", strconv.Itoa(h.pid), "-U", "-m", "--preserve-credentials", "--wdns=" + dir, "--"}, nil
}

// EnterHere is the argv prefix that runs a command inside the holder's
// namespaces, with the caller's credentials, in the directory it starts
// in (its exec.Cmd's Dir, such as /proc/self/fd/N of a mount's root as
// Mount returned it): nsenter opens it before entering (--wd=.) and
// changes back into it after, so no path is looked up in the holder's
// namespace.
func (h *Holder) EnterHere() ([]string, error) {
	bin := nsenter()
	if bin == "" {
		return nil, ErrNoNsenter
	}
	return []string{bin, "-t", strconv.Itoa(h.pid), "-U", "-m", "--preserve-credentials", "--wd=.", "--"}, nil
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
