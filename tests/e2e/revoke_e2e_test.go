package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// userKey is the user's public key in a creds file.
func userKey(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	id, err := bus.ParseCreds(b)
	must(t, err)
	return id.Key
}

// snooper is a client holding the watcher's credentials, subscribed to
// every inbox (_INBOX.>, _INBOX_*.>) and to everything (>): what it
// receives of a run is what a watcher could read of others' replies.
type snooper struct {
	nc   *nats.Conn
	mu   sync.Mutex
	errs []string
	got  []string // subjects received
}

func snoopInboxes(t *testing.T, url, creds string) *snooper {
	t.Helper()
	s := &snooper{}
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		s.mu.Lock()
		s.errs = append(s.errs, err.Error())
		s.mu.Unlock()
	}))
	must(t, err)
	t.Cleanup(nc.Close)
	s.nc = nc
	for _, subj := range []string{"_INBOX.>", "_INBOX_*.>", ">"} {
		_, err := nc.Subscribe(subj, func(m *nats.Msg) {
			s.mu.Lock()
			s.got = append(s.got, m.Subject)
			s.mu.Unlock()
		})
		must(t, err)
	}
	must(t, nc.Flush())
	return s
}

// check: every subscription was refused, and nothing came.
func (s *snooper) check(t *testing.T) {
	t.Helper()
	must(t, s.nc.Flush())
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) > 0 {
		t.Errorf("a watcher subscribed to the inboxes received %d messages (tasks, bundles, budget replies...): %v", len(s.got), s.got[:min(len(s.got), 10)])
	}
	for _, subj := range []string{"_INBOX.>", "_INBOX_*.>", ">"} {
		refused := false
		for _, e := range s.errs {
			refused = refused || strings.Contains(strings.ToLower(e), "permissions violation") && strings.Contains(e, `"`+subj+`"`)
		}
		if !refused {
			t.Errorf("the watcher's subscription to %s was not refused (errors: %v)", subj, s.errs)
		}
	}
}

// revokeNode revokes the first node (auth revoke, pushed to url): the
// server has closed its connection when the command returns (monitor's
// connz, for an external server), the node process stops saying why, its
// credentials are refused from then on, and auth list says so.
func revokeNode(t *testing.T, url, monitor, dir string, node *proc) {
	t.Helper()
	file := firstNodeCreds(dir)
	key := userKey(t, file)
	held, err := os.ReadFile(file)
	must(t, err)
	began := time.Now()
	orchestratorOK(t, "auth", "revoke", bus.FirstNode, "--dir", dir, "--nats", url)
	pushed := time.Since(began)
	if monitor != "" {
		resp, err := http.Get(monitor + "/connz?auth=true&limit=4096")
		must(t, err)
		var cz struct {
			Conns []struct {
				AuthorizedUser string `json:"authorized_user"`
			} `json:"connections"`
		}
		must(t, json.NewDecoder(resp.Body).Decode(&cz))
		resp.Body.Close()
		for _, c := range cz.Conns {
			if c.AuthorizedUser == key {
				t.Errorf("the revoked node is still connected once auth revoke returned")
			}
		}
	}
	if code := node.wait(30 * time.Second); code == 0 || !strings.Contains(node.errs(), "closed the connection") {
		t.Errorf("the revoked node: exit %d\n%s", code, node.errs())
	}
	t.Logf("auth revoke took %v (process start included); the node had stopped %v after it began", pushed, time.Since(began))
	if _, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, Creds: held}, zerolog.Nop()); err == nil ||
		!strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("the revoked node's credentials connecting again: %v", err)
	}
	list := orchestratorOK(t, "auth", "list", "--dir", dir)
	for _, l := range strings.Split(list, "\n") {
		if strings.HasPrefix(l, bus.FirstNode+" ") && !strings.Contains(l, "revoked") {
			t.Errorf("auth list: %q", l)
		}
	}
}
