package workspace

import (
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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
// An object also held in a pack is stored again; git does not mind.
func writeLoose(objDir string, id []byte, typ string, data []byte) error {
	name := hex.EncodeToString(id)
	dir := filepath.Join(objDir, name[:2])
	final := filepath.Join(dir, name[2:])
	if _, err := os.Lstat(final); err == nil {
		return nil
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("write object %s: %w", name, err)
	}
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return fmt.Errorf("write object %s: %w", name, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	zw, _ := zlib.NewWriterLevel(f, zlib.BestSpeed) // git's core.looseCompression default
	_, err = zw.Write([]byte(typ + " " + strconv.Itoa(len(data)) + "\x00"))
	if err == nil {
		_, err = zw.Write(data)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err != nil {
		return fmt.Errorf("write object %s: %w", name, err)
	}
	if err := os.Link(tmp, final); err != nil && !errors.Is(err, fs.ErrExist) {
		if err := os.Rename(tmp, final); err != nil {
			return fmt.Errorf("write object %s: %w", name, err)
		}
	}
	return nil
}
