package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// authStateFile keeps, in an auth folder, the prefix its credentials
// name, the nodes' own identities and the users revoked.
const authStateFile = "auth.json"

// authState is auth.json.
type authState struct {
	Prefix string `json:"prefix"`
	// Nodes are the node identities issued, by name.
	Nodes map[string]nodeRecord `json:"nodes,omitempty"`
	// Revoked are the users whose credentials the server refuses.
	Revoked []Revocation `json:"revoked,omitempty"`
}

type nodeRecord struct {
	Kinds []string `json:"kinds,omitempty"` // none: any kind
}

// Revocation is a user whose credentials are refused: every JWT of its
// key issued up to At.
type Revocation struct {
	Name string    `json:"name"` // the identity: a node's name, or a role's
	Key  string    `json:"key"`
	At   time.Time `json:"at"`
}

func loadAuthState(dir string) (authState, error) {
	st := authState{Prefix: DefaultPrefix}
	b, err := os.ReadFile(filepath.Join(dir, authStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil // a folder of an earlier troupe
	}
	if err != nil {
		return st, fmt.Errorf("read %s: %w", authStateFile, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%w: %s: %w", ErrBadKeys, filepath.Join(dir, authStateFile), err)
	}
	if st.Prefix == "" {
		st.Prefix = DefaultPrefix
	}
	return st, nil
}

func (a *Auth) saveState() error {
	if a.dir == "" {
		return nil
	}
	b, _ := json.MarshalIndent(a.state, "", "  ")
	return writePrivate(filepath.Join(a.dir, authStateFile), append(b, '\n'))
}

// revoked says user key was revoked.
func (a *Auth) revoked(key string) bool {
	return slices.ContainsFunc(a.state.Revoked, func(r Revocation) bool { return r.Key == key })
}

// Creds are the contents of a .creds file for a new user of role (a
// requester's or a watcher's; a node's has no registry key of its own:
// see NodeCreds).
func (a *Auth) Creds(role Role) ([]byte, error) {
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("create user key: %w", err)
	}
	return a.issue(Grant{Role: role}, user)
}

// NodeCreds are the contents of a .creds file for a new node named name
// that takes tasks of kinds (none: any kind), kept in memory only.
func (a *Auth) NodeCreds(name string, kinds []string) ([]byte, error) {
	if err := checkNodeName(name); err != nil {
		return nil, err
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("create user key: %w", err)
	}
	return a.issue(Grant{Role: RoleNode, Node: name, Kinds: kinds}, user)
}

// issue signs a user JWT for user with g's permissions (g's prefix and
// user key are filled in) and formats it as a .creds file.
func (a *Auth) issue(g Grant, user nkeys.KeyPair) ([]byte, error) {
	pub, _ := user.PublicKey()
	g.Prefix, g.User = a.prefix, pub
	perm, err := g.Permissions()
	if err != nil {
		return nil, err
	}
	uc := jwt.NewUserClaims(pub)
	uc.Name = userName(g.Role, g.Node)
	uc.Permissions = perm
	tok, err := uc.Encode(a.account)
	if err != nil {
		return nil, fmt.Errorf("sign %s user: %w", g.Role, err)
	}
	seed, _ := user.Seed()
	return jwt.FormatUserConfig(tok, seed)
}

// CredsPath is the .creds file of role in dir.
func CredsPath(dir string, role Role) string { return filepath.Join(dir, string(role)+".creds") }

// WriteCreds writes dir/<role>.creds for the requester and the watcher,
// signs again the node.creds an earlier troupe wrote (shared by every
// node; none is made now) and every node identity of the folder, and
// returns the paths by role (dir 0700, files 0600). A creds file already
// there keeps its user key: its JWT is signed again, with the permissions
// of this version, so a restart does not invalidate the files handed out.
// A revoked user is never signed again: a revoked requester's or
// watcher's file gets a new user, a node's stays revoked (auth node
// issues it anew).
func (a *Auth) WriteCreds(dir string) (map[Role]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create creds folder %s: %w", dir, err)
	}
	paths := map[Role]string{}
	for _, role := range Roles {
		path := CredsPath(dir, role)
		user, err := existingUser(path)
		if err != nil {
			return nil, err
		}
		if role == RoleNode && user == nil {
			continue // nodes have identities of their own now
		}
		if ok, err := a.resign(path, Grant{Role: role}, user, role != RoleNode); err != nil {
			return nil, err
		} else if ok {
			paths[role] = path
		}
	}
	for name, rec := range a.state.Nodes {
		path := a.NodePath(name)
		user, err := existingUser(path)
		if err != nil {
			return nil, err
		}
		if user == nil {
			continue // revoked, or removed by hand
		}
		if _, err := a.resign(path, Grant{Role: RoleNode, Node: name, Kinds: rec.Kinds}, user, false); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// resign writes path for user (a new one when nil) with g. A revoked
// user gets a new key with renew; without, resign writes nothing and
// reports false.
func (a *Auth) resign(path string, g Grant, user nkeys.KeyPair, renew bool) (bool, error) {
	if user != nil {
		if pub, _ := user.PublicKey(); a.revoked(pub) {
			if !renew {
				return false, nil
			}
			user = nil
		}
	}
	if user == nil {
		var err error
		if user, err = nkeys.CreateUser(); err != nil {
			return false, fmt.Errorf("create user key: %w", err)
		}
	}
	b, err := a.issue(g, user)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create creds folder %s: %w", filepath.Dir(path), err)
	}
	return true, writePrivate(path, b)
}

// existingUser is the user key of the creds file at path (nil if none).
func existingUser(path string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	kp, err := jwt.ParseDecoratedUserNKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadKeys, path, err)
	}
	return kp, nil
}
