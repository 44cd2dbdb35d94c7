package workspace

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"golang.org/x/sys/unix"
)

// objectID is the ID git gives an object of type typ ("blob", "tree")
// holding data: the hash of "<type> <size>\0" and data.
func objectID(idLen int, typ string, data []byte) []byte {
	h := newHash(idLen)
	h.Write([]byte(typ + " " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return h.Sum(nil)
}

// writeLoose stores an object as git does, unless a loose object of that
// ID is there already: zlib of "<type> <size>\0" and data, written to a
// temporary file in the object's directory, made read-only and linked
// (or, where links fail, renamed) to objects/<first 2 hex>/<the rest>.
// The object's directory is opened without following a symlink (an
// agent able to write the object store cannot make troupe write
// elsewhere through one). An object also held in a pack is stored
// again; git does not mind.
func writeLoose(objDir string, id []byte, typ string, data []byte) error {
	name := hex.EncodeToString(id)
	d, err := openBeneath(objDir, name[:2], true)
	if err != nil {
		return fmt.Errorf("write object %s: %w", name, err)
	}
	defer d.close()
	if _, err := d.lstat(name[2:]); err == nil {
		return nil
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed) // git's core.looseCompression default
	_, err = zw.Write([]byte(typ + " " + strconv.Itoa(len(data)) + "\x00"))
	if err == nil {
		_, err = zw.Write(data)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	tmp := "tmp_obj_" + strconv.FormatUint(rand.Uint64(), 36)
	if err == nil {
		err = d.writeNew(tmp, 0o444, z.Bytes())
	}
	if err != nil {
		return fmt.Errorf("write object %s: %w", name, err)
	}
	defer d.remove(tmp)
	if err := unix.Linkat(d.fd(), tmp, d.fd(), name[2:], 0); err != nil && !errors.Is(err, unix.EEXIST) {
		if err := unix.Renameat(d.fd(), tmp, d.fd(), name[2:]); err != nil {
			return fmt.Errorf("write object %s: %w", name, err)
		}
	}
	return nil
}
