package runner

import (
	"fmt"
	"os"

	"github.com/troupe-ai/troupe/bus"
)

// ServerCreds is the role material of an embedded server this process
// starts: the key material the server trusts, the creds files of the
// requester and the watcher (dir/<role>.creds) and the nodes' own
// (dir/nodes/<name>.creds), 0600 in a 0700 folder.
type ServerCreds struct {
	Auth  *bus.Auth
	Dir   string
	paths map[bus.Role]string
	temp  bool
}

// NewServerCreds keeps the role material in dir (made once, kept across
// restarts), or in a temporary folder under tmpBase (the system's when
// "") when dir is "" (removed by close).
func NewServerCreds(dir, prefix, tmpBase string) (*ServerCreds, error) {
	sc := &ServerCreds{Dir: dir}
	if dir == "" {
		tmp, err := os.MkdirTemp(tmpBase, "troupe-creds-")
		if err != nil {
			return nil, fmt.Errorf("make a creds folder: %w", err)
		}
		sc.Dir, sc.temp = tmp, true
	}
	var err error
	if sc.Auth, sc.paths, err = bus.InitAuthDir(sc.Dir, prefix); err != nil {
		sc.Close()
		return nil, err
	}
	return sc, nil
}

// ReadServerCreds takes the role material auth init wrote in dir,
// writing nothing there (a read-only mount serves).
func ReadServerCreds(dir, prefix string) (*ServerCreds, error) {
	a, paths, err := bus.ReadAuthDir(dir, prefix)
	if err != nil {
		return nil, err
	}
	return &ServerCreds{Auth: a, Dir: dir, paths: paths}, nil
}

// Close removes a temporary creds folder.
func (sc *ServerCreds) Close() {
	if sc != nil && sc.temp {
		_ = os.RemoveAll(sc.Dir)
	}
}

// CredsFlag is " --creds FILE" for role's file (a node's: see Path), or
// "" without credentials.
func (sc *ServerCreds) CredsFlag(role bus.Role) string {
	if sc == nil {
		return ""
	}
	return " --creds " + sc.Path(role)
}

// Path is role's creds file ("" without credentials). A node's is the
// first node's own (nodes/node-1.creds), or the shared node.creds an
// earlier troupe left in the folder.
func (sc *ServerCreds) Path(role bus.Role) string {
	if sc == nil {
		return ""
	}
	if p, ok := sc.paths[role]; ok || role != bus.RoleNode {
		return p
	}
	return sc.Auth.NodePath(bus.FirstNode)
}

// Node is the creds file of the node name's own credentials, issued now
// when it has none.
func (sc *ServerCreds) Node(name string) (string, error) {
	return sc.Auth.IssueNode(name, nil)
}
