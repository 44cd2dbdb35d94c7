package httpguard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// TokenFileName is the token file `orchestrator auth init DIR` writes in
// DIR.
const TokenFileName = "http.token"

// minToken is the shortest token accepted, in characters.
const minToken = 16

// token is a listener's bearer token and the cookie value a browser gets
// for it (a digest, so the cookie is not the token itself).
type token struct {
	bearer []byte
	cookie []byte
}

// readToken reads a token file: a regular file no one but its owner may
// read, holding one token of at least 16 characters.
func readToken(path string) (*token, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s may be read by others (mode %04o): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := strings.TrimSpace(string(b))
	if len(t) < minToken || strings.ContainsAny(t, " \t\r\n") {
		return nil, fmt.Errorf("%s must hold one token of at least %d characters and no spaces", path, minToken)
	}
	return newToken(t), nil
}

func newToken(t string) *token {
	sum := sha256.Sum256([]byte("troupe http cookie\x00" + t))
	return &token{bearer: []byte(t), cookie: []byte(hex.EncodeToString(sum[:]))}
}

// WriteTokenFile writes a new random token to path, readable by its owner
// only (0600), unless path exists: a token in use is kept. It reports
// whether it wrote one.
func WriteTokenFile(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	_, err = fmt.Fprintln(f, hex.EncodeToString(b))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return false, err
	}
	return true, nil
}

// cookieName is the cookie for the listener a browser reached at host:
// cookies are shared by every port of a host, so each port has its own.
func cookieName(host string) string {
	if p := portOf(host); p != "" {
		return "troupe_token_" + p
	}
	return "troupe_token"
}

// admit lets a request with the token through: as "Authorization: Bearer
// TOKEN", as the cookie, or, on a GET, as ?token=TOKEN, which sets the
// cookie and redirects to the same URL without it (so the token stays out
// of the history and of Referer headers). Anything else is answered 401.
func (t *token) admit(w http.ResponseWriter, r *http.Request) bool {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, value, _ := strings.Cut(auth, " ")
		if strings.EqualFold(scheme, "Bearer") && equal(strings.TrimSpace(value), t.bearer) {
			return true
		}
		refuse(w, "the bearer token is not this server's")
		return false
	}
	if c, err := r.Cookie(cookieName(r.Host)); err == nil && equal(c.Value, t.cookie) {
		return true
	}
	q := r.URL.Query()
	if !q.Has("token") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		refuse(w, "this server needs its token: send Authorization: Bearer TOKEN, or open the page once with ?token=TOKEN")
		return false
	}
	if !equal(q.Get("token"), t.bearer) {
		refuse(w, "the token is not this server's")
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r.Host), Value: string(t.cookie), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q.Del("token")
	u := *r.URL
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	return false
}

// equal compares in constant time.
func equal(got string, want []byte) bool {
	return subtle.ConstantTimeCompare([]byte(got), want) == 1
}

// refuse answers 401 with a Bearer challenge.
func refuse(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="troupe"`)
	http.Error(w, "unauthorized: "+why, http.StatusUnauthorized)
}
