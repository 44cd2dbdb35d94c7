package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/bus"
)

// authDir is the --dir of an auth command, which must hold key material.
func authDir(fs *flagSet, usage string) (*bus.Auth, error) {
	dir := fs.values["dir"]
	if dir == "" {
		return nil, usageErr("%s needs --dir DIR: the folder auth init wrote (serve --store STORE keeps it in STORE/creds)", usage)
	}
	a, err := bus.OpenAuth(dir)
	if err != nil {
		return nil, usageErr("--dir: %v", err)
	}
	return a, nil
}

// authNode is `auth node NAME --dir DIR [--kinds K,...]`: a node's own
// credentials, which may write only its registry entry and pull only its
// kinds' tasks.
func authNode(pos []string, fs *flagSet, stdout, stderr io.Writer) (int, error) {
	if len(pos) != 1 {
		return exitUsage, usageErr("usage: orchestrator auth node NAME --dir DIR [--kinds K,...]")
	}
	a, err := authDir(fs, "auth node")
	if err != nil {
		return exitUsage, err
	}
	var kinds []string
	if k := fs.values["kinds"]; k != "" {
		kinds = strings.Split(k, ",")
	}
	path, err := a.IssueNode(pos[0], kinds)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	what := "any kind"
	if len(kinds) > 0 {
		what = "kinds " + strings.Join(kinds, ",")
	}
	fmt.Fprintln(stdout, path)
	fmt.Fprintf(stderr, "node %s: its own credentials (%s; it may write only its registry entry, %s)\n", pos[0], what, pos[0])
	fmt.Fprintf(stderr, "node:     node --nats URL --creds %s --workspace DIR\n", path)
	fmt.Fprintf(stderr, "revoke:   orchestrator auth revoke %s --dir %s --nats URL\n", pos[0], a.Dir())
	return exitOK, nil
}

// authRevoke is `auth revoke NAME --dir DIR [--nats URL]`: the account
// is signed again with NAME's key revoked, server.conf rewritten, and,
// given a server, the new account pushed to it: its connections close at
// once and it cannot connect again. A name revoked already is pushed
// again.
func authRevoke(ctx context.Context, pos []string, fs *flagSet, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	if len(pos) != 1 {
		return exitUsage, usageErr("usage: orchestrator auth revoke NAME --dir DIR [--nats URL] [--config FILE]")
	}
	a, err := authDir(fs, "auth revoke")
	if err != nil {
		return exitUsage, err
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Home: getenv("HOME"), Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	name := pos[0]
	r, err := a.Revoke(name)
	if errors.Is(err, bus.ErrUnknownIdentity) {
		if r, err = revokedAlready(a, name); err != nil {
			return exitUsage, usageErr("%v", err)
		}
	} else if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(stdout, "%s %s revoked %s\n", r.Name, r.Key, r.At.Format(time.RFC3339))
	url, setting := cfg.NATS.URL, "nats.url"
	if v := fs.values["nats"]; v != "" {
		url, setting = v, "--nats"
	}
	if url == "" {
		fmt.Fprintf(stderr, "warning: no server told (give --nats URL): the servers accept %s until they get the account's new JWT or restart with %s\n",
			name, bus.ServerConfigFile)
		return exitOK, nil
	}
	if err := a.PushAccount(ctx, bus.ConnectOptions{URLs: url, Setting: setting, TLSCA: cfg.NATS.TLSCA, TLSCert: cfg.NATS.TLSCert,
		TLSKey: cfg.NATS.TLSKey}); err != nil {
		return exitFailed, fmt.Errorf("%w (the revocation is kept in %s: run this again to push it)", err, a.Dir())
	}
	fmt.Fprintf(stderr, "the server closed %s's connections and refuses its credentials from now on\n", name)
	return exitOK, nil
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

// authList is `auth list --dir DIR`: who holds which credentials.
func authList(pos []string, fs *flagSet, stdout io.Writer) (int, error) {
	if len(pos) != 0 {
		return exitUsage, usageErr("usage: orchestrator auth list --dir DIR")
	}
	a, err := authDir(fs, "auth list")
	if err != nil {
		return exitUsage, err
	}
	hs, err := a.Holders()
	if err != nil {
		return exitFailed, err
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
		return exitFailed, err
	}
	fmt.Fprintf(stdout, "(credentials for nats.prefix %s; the server refuses the revoked ones once it has the account's JWT)\n", a.Prefix())
	return exitOK, nil
}
