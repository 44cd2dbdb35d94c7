package bus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FirstNode is the name of the node identity a new auth folder (auth
// init, serve) issues, so the first node has credentials of its own.
const FirstNode = "node-1"

// ErrUnknownIdentity is a name that no credentials of an auth folder hold.
var ErrUnknownIdentity = errors.New("no such credentials")

// checkNodeName refuses a node name that cannot be a registry key, or
// that names a role's file.
func checkNodeName(name string) error {
	if err := CheckName("node name", name); err != nil {
		return err
	}
	if _, err := ParseRole(name); err == nil {
		return fmt.Errorf("node name %q is a role's name: pick another", name)
	}
	return nil
}

// NodePath is the creds file of the node identity name: nodes/<name>.creds.
func (a *Auth) NodePath(name string) string { return filepath.Join(a.dir, "nodes", name+".creds") }

// IssueNode writes the creds file of a node of its own identity, name,
// that takes tasks of kinds (none: any kind), and returns its path. Its
// user may write only its own registry key. A name issued already keeps
// its user key, and its permissions are signed again with kinds; a
// revoked name gets a new key.
func (a *Auth) IssueNode(name string, kinds []string) (string, error) {
	if a.dir == "" {
		return "", errors.New("issue node credentials: the key material is not kept in a folder")
	}
	if err := checkNodeName(name); err != nil {
		return "", err
	}
	for _, k := range kinds {
		if err := CheckToken("kind", k); err != nil {
			return "", err
		}
	}
	path := a.NodePath(name)
	user, err := existingUser(path)
	if err != nil {
		return "", err
	}
	if a.state.Nodes == nil {
		a.state.Nodes = map[string]nodeRecord{}
	}
	a.state.Nodes[name] = nodeRecord{Kinds: slices.Clone(kinds)}
	if err := a.saveState(); err != nil {
		return "", err
	}
	if _, err := a.resign(path, Grant{Role: RoleNode, Node: name, Kinds: kinds}, user, true); err != nil {
		return "", err
	}
	return path, nil
}

// identityPath is the creds file of name: a role's file for a role's
// name, else the node identity's.
func (a *Auth) identityPath(name string) string {
	if r, err := ParseRole(name); err == nil {
		return CredsPath(a.dir, r)
	}
	return a.NodePath(name)
}

// Revoke revokes the credentials named name (a node identity, or a role's
// file: requester, node for the shared node.creds, watcher): the account
// is signed again with the user's key revoked and server.conf rewritten.
// The creds file stays, refused: a node still holding it gets a clear
// refusal from the server when it reconnects, and closes, rather than
// looking for a file gone. The servers refuse the user once they have
// the account's new JWT (PushAccount, or a restart with server.conf).
func (a *Auth) Revoke(name string) (Revocation, error) {
	path := a.identityPath(name)
	user, err := existingUser(path)
	if err != nil {
		return Revocation{}, err
	}
	key := ""
	if user != nil {
		key, _ = user.PublicKey()
	}
	if user == nil || a.revoked(key) {
		return Revocation{}, fmt.Errorf("%w: none valid named %q in %s (orchestrator auth list shows them)", ErrUnknownIdentity, name, a.dir)
	}
	r := Revocation{Name: name, Key: key, At: time.Now().UTC().Truncate(time.Second)}
	a.state.Revoked = append(a.state.Revoked, r)
	delete(a.state.Nodes, name)
	if err := a.sign(); err != nil {
		return Revocation{}, err
	}
	if err := a.saveState(); err != nil {
		return Revocation{}, err
	}
	if err := a.writeServerConfig(); err != nil {
		return Revocation{}, err
	}
	return r, nil
}

// Holder is one set of credentials an auth folder issued.
type Holder struct {
	Name  string // a node's name, or a role's for a role's file
	Role  Role
	Key   string
	File  string   // "" for a revoked user
	Kinds []string // a node's kinds; none: any
	// Issued is when its JWT was signed; Revoked when it was revoked
	// (zero: valid).
	Issued, Revoked time.Time
}

// Holders lists who holds credentials of the folder: the roles' files,
// the node identities and the revoked users, sorted by name.
func (a *Auth) Holders() ([]Holder, error) {
	var out []Holder
	add := func(name, path string, kinds []string) error {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		id, err := ParseCreds(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !a.revoked(id.Key) { // a revoked one is listed with its revocation
			out = append(out, Holder{Name: name, Role: id.Role, Key: id.Key, File: path, Kinds: kinds, Issued: id.IssuedAt})
		}
		return nil
	}
	for _, r := range Roles {
		if err := add(string(r), CredsPath(a.dir, r), nil); err != nil {
			return nil, err
		}
	}
	for name, rec := range a.state.Nodes {
		if err := add(name, a.NodePath(name), rec.Kinds); err != nil {
			return nil, err
		}
	}
	for _, r := range a.state.Revoked {
		role := RoleNode
		if pr, err := ParseRole(r.Name); err == nil {
			role = pr
		}
		out = append(out, Holder{Name: r.Name, Role: role, Key: r.Key, Revoked: r.At})
	}
	slices.SortStableFunc(out, func(x, y Holder) int {
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return x.Revoked.Compare(y.Revoked)
	})
	return out, nil
}
