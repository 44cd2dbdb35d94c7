package bus

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"strings"
)

// Secrets are the credentials o carries, to be redacted from everything
// the program writes: the token, the password, passwords in the URLs and
// the JWT and nkey seed of the creds file. A creds file that cannot be
// read adds nothing (Connect reports it).
func (o ConnectOptions) Secrets() []string {
	out := []string{o.Token, o.Password}
	for _, raw := range strings.Split(o.URLs, ",") {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			} else {
				out = append(out, u.User.Username()) // nats://TOKEN@host
			}
		}
	}
	if o.CredsFile != "" {
		if data, err := os.ReadFile(o.CredsFile); err == nil {
			out = append(out, credsSecrets(data)...)
		}
	}
	return out
}

// credsSecrets returns the lines inside the armored blocks of a .creds
// file ("-----BEGIN NATS USER JWT-----" ... "------END NATS USER
// JWT------", the same for the seed).
func credsSecrets(data []byte) []string {
	var out []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "---") && strings.Contains(line, "BEGIN"):
			in = true
		case strings.HasPrefix(line, "---") && strings.Contains(line, "END"):
			in = false
		case in && line != "":
			out = append(out, line)
		}
	}
	return out
}
