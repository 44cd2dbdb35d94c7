package workspace

import (
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// keepPrivate writes what data writes (streaming, fsynced) as the file name in the folders dirs beneath
// at beneath base, none of them followed if it is a symlink: each of
// dirs is made, or narrowed, to 0700 and the file is written new as 0600
// and renamed over what was there (replaced, never written through).
func keepPrivate(base, at string, dirs []string, name string, data patchWriter) error {
	d, err := openBeneath(base, at, true)
	if err != nil {
		return err
	}
	for _, c := range dirs {
		if err := unix.Mkdirat(d.fd(), c, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			d.close()
			return err
		}
		next, err := d.sub(c, false)
		d.close()
		if err != nil {
			return err
		}
		d = next
		if err := unix.Fchmod(d.fd(), 0o700); err != nil {
			d.close()
			return err
		}
	}
	defer d.close()
	dropDeadTemps(d)
	tmp := ".troupe-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(rand.Uint64(), 16) + ".tmp"
	if err := d.writeSynced(tmp, 0o600, data, "patch "+name); err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
		return err
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		_ = unix.Unlinkat(d.fd(), tmp, 0)
		return err
	}
	return nil
}

// dropDeadTemps removes from d the temporary files keepPrivate named
// for a process no longer running (.troupe-<pid>-<random>.tmp): one
// killed while it wrote them, whose next keep in the same folder (a
// recovered land's patch, the next patch of its run) drops them.
func dropDeadTemps(d *dirFD) {
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return
	}
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, ".troupe-")
		if ok && strings.HasSuffix(rest, ".tmp") && deadOwner(rest) {
			_ = d.remove(name)
		}
	}
}
