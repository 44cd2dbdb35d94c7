// Package authcli is `orchestrator auth`: the key material, a nats-server
// configuration and the creds files for an existing server (init), a
// node's own credentials (node), one holder's credentials revoked at once
// (revoke) and who holds what (list). Errors the caller made are marked
// runner.ErrUsage.
package authcli

import (
	"context"
	"errors"
	"fmt"
	"github.com/troupe-ai/troupe/app/runner"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/bus"
)

// Open is the key material in dir (an auth command's --dir); usage names
// the command for the error when dir is "".
func Open(dir, usage string) (*bus.Auth, error) {
	if dir == "" {
		return nil, runner.Usage("%s needs --dir DIR: the folder auth init wrote (serve --store STORE keeps it in STORE/creds)", usage)
	}
	a, err := bus.OpenAuth(dir)
	if err != nil {
		return nil, runner.Usage("--dir: %v", err)
	}
	return a, nil
}

// Node issues node name its own credentials, which may write only its
// registry entry and pull only kinds' tasks (any kind with none).
func Node(a *bus.Auth, name string, kinds []string, stdout, stderr io.Writer) error {
	path, err := a.IssueNode(name, kinds)
	if err != nil {
		return runner.Usage("%v", err)
	}
	what := "any kind"
	if len(kinds) > 0 {
		what = "kinds " + strings.Join(kinds, ",")
	}
	fmt.Fprintln(stdout, path)
	fmt.Fprintf(stderr, "node %s: its own credentials (%s; it may write only its registry entry, %s)\n", name, what, name)
	fmt.Fprintf(stderr, "node:     node --nats URL --creds %s --workspace DIR\n", path)
	fmt.Fprintf(stderr, "revoke:   orchestrator auth revoke %s --dir %s --nats URL\n", name, a.Dir())
	return nil
}

// Revoke signs the account again with name's key revoked and rewrites
// server.conf; given a server (url, named by setting, reached with the
// TLS settings of nc), it pushes the new account there: name's
// connections close at once and it cannot connect again. A name revoked
// already is pushed again.
func Revoke(ctx context.Context, a *bus.Auth, name string, nc config.NATS, url, setting string, stdout, stderr io.Writer) error {
	r, err := a.Revoke(name)
	if errors.Is(err, bus.ErrUnknownIdentity) {
		if r, err = revokedAlready(a, name); err != nil {
			return runner.Usage("%v", err)
		}
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s revoked %s\n", r.Name, r.Key, r.At.Format(time.RFC3339))
	if url == "" {
		fmt.Fprintf(stderr, "warning: no server told (give --nats URL): the servers accept %s until they get the account's new JWT or restart with %s\n",
			name, bus.ServerConfigFile)
		return nil
	}
	if err := a.PushAccount(ctx, bus.ConnectOptions{URLs: url, Setting: setting, TLSCA: nc.TLSCA, TLSCert: nc.TLSCert,
		TLSKey: nc.TLSKey}); err != nil {
		return fmt.Errorf("%w (the revocation is kept in %s: run this again to push it)", err, a.Dir())
	}
	fmt.Fprintf(stderr, "the server closed %s's connections and refuses its credentials from now on\n", name)
	return nil
}

// revokedAlready is name's revocation when it was revoked before.
func revokedAlready(a *bus.Auth, name string) (bus.Revocation, error) {
	hs, err := a.Holders()
	if err != nil {
		return bus.Revocation{}, err
	}
	if i := slices.IndexFunc(hs, func(h bus.Holder) bool { return h.Name == name && !h.Revoked.IsZero() }); i >= 0 {
		return bus.Revocation{Name: name, Key: hs[i].Key, At: hs[i].Revoked}, nil
	}
	return bus.Revocation{}, fmt.Errorf("%w: none named %q in %s (orchestrator auth list --dir %s shows them)", bus.ErrUnknownIdentity, name, a.Dir(), a.Dir())
}

// List writes who holds which credentials, and who was revoked.
func List(a *bus.Auth, stdout io.Writer) error {
	hs, err := a.Holders()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tROLE\tKINDS\tKEY\tISSUED\tSTATUS\tFILE\n")
	for _, h := range hs {
		kinds, status, file, issued := "-", "valid", h.File, "-"
		if h.Role == bus.RoleNode {
			kinds = "any"
			if len(h.Kinds) > 0 {
				kinds = strings.Join(h.Kinds, ",")
			}
			if h.Name == string(bus.RoleNode) {
				status = "valid (shared by every node: replace with auth node)"
			}
		}
		if !h.Issued.IsZero() {
			issued = h.Issued.UTC().Format(time.RFC3339)
		}
		if !h.Revoked.IsZero() {
			status, file, kinds = "revoked "+h.Revoked.UTC().Format(time.RFC3339), "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Name, h.Role, kinds, h.Key, issued, status, file)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "(credentials for nats.prefix %s; the server refuses the revoked ones once it has the account's JWT)\n", a.Prefix())
	return nil
}
