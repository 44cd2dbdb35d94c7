package bus

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
)

// Identity is who a connection is, as its credentials say: a troupe
// role's user (its role, and a node's own name), its key and what the
// server lets it do. A connection without a user JWT (no credentials, a
// token, a user and password) has the zero Identity, which may do
// anything as far as troupe can tell.
type Identity struct {
	Role Role   // "" when the credentials are not a troupe role's
	Node string // a node's own name; "" for the shared node.creds and other roles
	Key  string // the user's public key
	// Name is the user's name as the JWT has it.
	Name     string
	IssuedAt time.Time
	perm     *jwt.Permissions // nil: unknown (no JWT), nothing refused here
}

// userName is the name a troupe user's JWT carries: troupe-<role>, or
// troupe-node:<name> for a node of its own identity.
func userName(role Role, node string) string {
	if node != "" {
		return "troupe-" + string(role) + ":" + node
	}
	return "troupe-" + string(role)
}

// ParseCreds reads the identity of a .creds file's contents (the user
// JWT; its signature is the server's to check).
func ParseCreds(creds []byte) (Identity, error) {
	tok, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrBadKeys, err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrBadKeys, err)
	}
	id := Identity{Key: uc.Subject, Name: uc.Name, IssuedAt: time.Unix(uc.IssuedAt, 0), perm: &uc.Permissions}
	if rest, ok := strings.CutPrefix(uc.Name, "troupe-"); ok {
		role, node, _ := strings.Cut(rest, ":")
		if r, err := ParseRole(role); err == nil {
			id.Role, id.Node = r, node
		}
	}
	return id, nil
}

// MayPublish says the identity's permissions let it publish on subject
// (a literal subject); replies to requests received are not counted.
func (id Identity) MayPublish(subject string) bool {
	if id.perm == nil {
		return true
	}
	return allowed(id.perm.Pub, subject)
}

// MaySubscribe says the identity's permissions let it subscribe to
// subject (a literal subject).
func (id Identity) MaySubscribe(subject string) bool {
	if id.perm == nil {
		return true
	}
	return allowed(id.perm.Sub, subject)
}

// Inbox is the connection's inbox prefix: InboxPrefix(Key) when its
// permissions give it that private inbox, "" (the shared _INBOX) for
// credentials of an earlier troupe or none.
func (id Identity) Inbox() string {
	if id.Key == "" || id.perm == nil {
		return ""
	}
	if p := InboxPrefix(id.Key); id.MaySubscribe(p + ".x") {
		return p
	}
	return ""
}

// allowed applies a permission to a literal subject as the server does:
// an empty allow list allows everything; the deny list wins.
func allowed(p jwt.Permission, subject string) bool {
	ok := len(p.Allow) == 0
	for _, f := range p.Allow {
		if SubjectMatches(f, subject) {
			ok = true
			break
		}
	}
	for _, f := range p.Deny {
		if SubjectMatches(f, subject) {
			return false
		}
	}
	return ok
}

// SubjectMatches says filter (with * for one token and a final > for one
// or more) matches the literal subject.
func SubjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, t := range f {
		if t == ">" && i == len(f)-1 {
			return len(s) > i
		}
		if i >= len(s) || t != "*" && t != s[i] {
			return false
		}
	}
	return len(f) == len(s)
}
