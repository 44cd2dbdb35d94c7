package bus

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// AccountName is the NATS account every troupe role's user belongs to.
const AccountName = "TROUPE"

// Auth is the key material of one troupe deployment in NATS's operator
// mode: an operator that signs two accounts (TROUPE, where every role's
// user lives, and SYS, the server's own), and the account key that signs
// the users. Whoever holds the account seed can mint credentials of any
// role: it stays in the folder it was written to, 0600. The folder also
// keeps the subject prefix the credentials name, the nodes' own
// identities and the users revoked (auth.json).
type Auth struct {
	prefix                             string
	dir                                string // "" for material kept in memory only
	operator, account, system          nkeys.KeyPair
	operatorJWT, accountJWT, systemJWT string
	state                              authState
}

// Key files of an auth folder: the seeds of the operator and both accounts.
const (
	operatorSeedFile = "operator.nk"
	accountSeedFile  = "account.nk"
	systemSeedFile   = "system.nk"
	// ServerConfigFile is the nats-server configuration snippet
	// (operator, system account, memory resolver with both accounts).
	ServerConfigFile = "server.conf"
)

// NewAuth makes fresh key material for subjects under prefix, kept in
// memory only.
func NewAuth(prefix string) (*Auth, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, fmt.Errorf("create operator key: %w", err)
	}
	acc, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("create account key: %w", err)
	}
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return nil, fmt.Errorf("create system account key: %w", err)
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	a := &Auth{operator: op, account: acc, system: sys, state: authState{Prefix: prefix}}
	return a, a.sign()
}

// sign checks the prefix and signs the operator and both accounts (the
// TROUPE account with the revocations kept).
func (a *Auth) sign() error {
	if err := CheckToken("nats.prefix", a.state.Prefix); err != nil {
		return err
	}
	a.prefix = a.state.Prefix
	opPub, _ := a.operator.PublicKey()
	accPub, _ := a.account.PublicKey()
	sysPub, _ := a.system.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "troupe"
	oc.SystemAccount = sysPub
	var err error
	if a.operatorJWT, err = oc.Encode(a.operator); err != nil {
		return fmt.Errorf("sign operator: %w", err)
	}
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	for _, r := range a.state.Revoked {
		ac.RevokeAt(r.Key, r.At)
	}
	if a.accountJWT, err = ac.Encode(a.operator); err != nil {
		return fmt.Errorf("sign account: %w", err)
	}
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	if a.systemJWT, err = sc.Encode(a.operator); err != nil {
		return fmt.Errorf("sign system account: %w", err)
	}
	return nil
}

// Prefix is the subject prefix the credentials name.
func (a *Auth) Prefix() string { return a.prefix }

// Dir is the folder the material is kept in ("" in memory only).
func (a *Auth) Dir() string { return a.dir }

// OpenAuth reads the key material kept in dir, which must hold it (auth
// init, or serve --store STORE for STORE/creds, made it).
func OpenAuth(dir string) (*Auth, error) {
	if _, err := os.Stat(filepath.Join(dir, accountSeedFile)); err != nil {
		return nil, fmt.Errorf("%w: %s holds no troupe key material (orchestrator auth init DIR makes it; serve --store STORE keeps it in STORE/creds)", ErrBadKeys, dir)
	}
	a, _, err := LoadAuth(dir, "")
	return a, err
}

// LoadAuth reads the key material kept in dir, making and keeping it
// (dir 0700, files 0600) when dir has none. prefix "" keeps the prefix
// the folder was made for (the default prefix for a folder of an earlier
// troupe); another prefix replaces it, and the creds files written next
// name it. created says the material was made now.
func LoadAuth(dir, prefix string) (a *Auth, created bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("create auth folder %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("restrict auth folder %s: %w", dir, err)
	}
	keys, err := readKeys(dir)
	if err != nil {
		return nil, false, err
	}
	switch len(keys) {
	case len(seedFiles):
		st, err := loadAuthState(dir)
		if err != nil {
			return nil, false, err
		}
		if prefix != "" && prefix != st.Prefix {
			st.Prefix = prefix
		}
		a := &Auth{dir: dir, operator: keys[0], account: keys[1], system: keys[2], state: st}
		if err := a.sign(); err != nil {
			return nil, false, err
		}
		return a, false, a.saveState()
	case 0:
	default:
		return nil, false, fmt.Errorf("%w: %s has only some of %s", ErrBadKeys, dir, strings.Join(seedFiles, ", "))
	}
	if a, err = NewAuth(prefix); err != nil {
		return nil, false, err
	}
	a.dir = dir
	files := seedFiles
	for i, kp := range []nkeys.KeyPair{a.operator, a.account, a.system} {
		seed, _ := kp.Seed()
		if err := writePrivate(filepath.Join(dir, files[i]), append(seed, '\n')); err != nil {
			return nil, false, err
		}
	}
	return a, true, a.saveState()
}

// MaxControlLine is the longest protocol line the server accepts (the
// nats-server default is 4 KiB). A client's CONNECT line carries its user
// JWT, and the node role's subject permissions (streams, buckets, object
// stores, each JetStream API it may call) take it past 4 KiB; the embedded
// server and auth init's configuration allow 16 KiB.
const MaxControlLine = 16 << 10

// ServerConfig is a nats-server configuration snippet that trusts this
// operator and knows both accounts (memory resolver). Use it with
// `nats-server -js -c FILE`, or include it in a fuller configuration.
func (a *Auth) ServerConfig() string {
	accPub, _ := a.account.PublicKey()
	sysPub, _ := a.system.PublicKey()
	var b strings.Builder
	b.WriteString("# troupe: operator mode; every client needs a .creds file of its role\n")
	b.WriteString("# a role's user JWT (its subject permissions) rides in the CONNECT line\n")
	fmt.Fprintf(&b, "max_control_line: %d\n", MaxControlLine)
	fmt.Fprintf(&b, "operator: %q\n", a.operatorJWT)
	fmt.Fprintf(&b, "system_account: %s\n", sysPub)
	b.WriteString("resolver: MEMORY\nresolver_preload: {\n")
	fmt.Fprintf(&b, "  # %s\n  %s: %q\n", AccountName, accPub, a.accountJWT)
	fmt.Fprintf(&b, "  # SYS\n  %s: %q\n}\n", sysPub, a.systemJWT)
	return b.String()
}

// configure puts the operator, the accounts and a memory resolver into
// opts.
func (a *Auth) configure(opts *server.Options) error {
	oc, err := jwt.DecodeOperatorClaims(a.operatorJWT)
	if err != nil {
		return fmt.Errorf("decode operator: %w", err)
	}
	accPub, _ := a.account.PublicKey()
	sysPub, _ := a.system.PublicKey()
	res := &server.MemAccResolver{}
	if err := res.Store(accPub, a.accountJWT); err != nil {
		return fmt.Errorf("store account: %w", err)
	}
	if err := res.Store(sysPub, a.systemJWT); err != nil {
		return fmt.Errorf("store system account: %w", err)
	}
	opts.TrustedOperators = []*jwt.OperatorClaims{oc}
	opts.AccountResolver = res
	opts.SystemAccount = sysPub
	return nil
}

// writePrivate writes b to path, readable by its owner only, through a
// temporary file so a reader never sees half of it.
func writePrivate(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// InitAuthDir keeps in dir what a deployment needs: the key material
// (made once), the creds files of the requester and the watcher, the
// first node's own (nodes/node-1.creds, when dir is new) and the server
// configuration snippet; a node.creds of an earlier troupe is signed
// again. It returns the material and the creds paths by role (the node's
// is node.creds only where one was kept; see Auth.NodePath).
func InitAuthDir(dir, prefix string) (*Auth, map[Role]string, error) {
	a, created, err := LoadAuth(dir, prefix)
	if err != nil {
		return nil, nil, err
	}
	paths, err := a.WriteCreds(dir)
	if err != nil {
		return nil, nil, err
	}
	if _, shared := paths[RoleNode]; created || !shared && len(a.state.Nodes) == 0 && len(a.state.Revoked) == 0 {
		if _, err := a.IssueNode(FirstNode, nil); err != nil {
			return nil, nil, err
		}
	}
	if err := a.writeServerConfig(); err != nil {
		return nil, nil, err
	}
	return a, paths, nil
}

// writeServerConfig writes the server snippet into the folder.
func (a *Auth) writeServerConfig() error {
	return writePrivate(filepath.Join(a.dir, ServerConfigFile), []byte(a.ServerConfig()))
}

// seedFiles hold the operator's, the account's and the system account's
// keys, in that order.
var seedFiles = []string{operatorSeedFile, accountSeedFile, systemSeedFile}

// readKeys reads the keys of seedFiles in dir, as far as they exist.
func readKeys(dir string) ([]nkeys.KeyPair, error) {
	var keys []nkeys.KeyPair
	for _, f := range seedFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadKeys, filepath.Join(dir, f), err)
		}
		keys = append(keys, kp)
	}
	return keys, nil
}

// ReadAuthDir reads what auth init wrote in dir and writes nothing, so a
// read-only folder (a Kubernetes Secret mounted in a pod) serves: the
// keys and every role's creds file must be there.
func ReadAuthDir(dir, prefix string) (*Auth, map[Role]string, error) {
	keys, err := readKeys(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(keys) != len(seedFiles) {
		return nil, nil, fmt.Errorf("%w: %s lacks some of %s (write them with orchestrator auth init)", ErrBadKeys, dir, strings.Join(seedFiles, ", "))
	}
	st, err := loadAuthState(dir)
	if err != nil {
		return nil, nil, err
	}
	if prefix != "" {
		st.Prefix = prefix
	}
	a := &Auth{dir: dir, operator: keys[0], account: keys[1], system: keys[2], state: st}
	if err := a.sign(); err != nil {
		return nil, nil, err
	}
	paths := map[Role]string{}
	for _, role := range Roles {
		path := CredsPath(dir, role)
		user, err := existingUser(path)
		if err != nil {
			return nil, nil, err
		}
		if user == nil {
			if role == RoleNode {
				continue // nodes have identities of their own (nodes/NAME.creds)
			}
			return nil, nil, fmt.Errorf("%w: %s is missing (write it with orchestrator auth init)", ErrBadKeys, path)
		}
		paths[role] = path
	}
	return a, paths, nil
}

// AccountKey is the public key of the account troupe's users belong to
// (what the NATS monitoring endpoint and KEDA's scaler call the account).
func (a *Auth) AccountKey() string {
	pub, _ := a.account.PublicKey()
	return pub
}
