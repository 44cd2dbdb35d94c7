package main

// The help of orchestrator auth and its commands (commandHelp).
const (
	authHelp = `Usage: orchestrator auth init DIR [--config FILE]
       orchestrator auth node NAME --dir DIR [--kinds K,...]
       orchestrator auth revoke NAME --dir DIR [--nats URL] [--config FILE]
       orchestrator auth list --dir DIR

Credentials for an existing NATS server or cluster, one per role and one
per node (see the README's "Who may do what on the bus"). init makes the
key material and the files in DIR; node gives one node credentials of its
own; revoke revokes one at once; list shows who holds what. serve --store
STORE keeps the same folder in STORE/creds, so the commands work on it
too. orchestrator auth COMMAND --help says more.

Examples:
  orchestrator auth init /etc/troupe
  orchestrator auth node builder-2 --dir /etc/troupe
  orchestrator auth revoke builder-2 --dir /etc/troupe --nats nats://hub:4222
  orchestrator auth list --dir /etc/troupe
`
	authInitHelp = `Usage: orchestrator auth init DIR [--config FILE]

Writes what an existing NATS server (or cluster) needs to run troupe with
credentials per role and per node, into DIR (made 0700; kept: a second init
keeps the keys and signs the creds files again): operator.nk, account.nk and
system.nk (the keys; account.nk mints credentials, keep it private),
server.conf (operator mode with a memory resolver holding both accounts),
requester.creds, watcher.creds and the first node's own
nodes/node-1.creds (0600), auth.json (the prefix, the nodes, the
revoked), and http.token (0600, kept: the token of --http-token-file for
the web view, /metrics and MCP over HTTP). The credentials name the configuration's nats.prefix. A folder
of an earlier troupe keeps its shared node.creds, signed again (it works
for one more release; give each node its own with auth node). Start the
server with nats-server -js -c DIR/server.conf (or include server.conf in
your own configuration), then give each process its file: run and resume
--creds requester.creds, each node its own, watch --creds watcher.creds.

Flags:
  --config FILE   a config file over ~/.config/troupe/config.yaml (its nats.prefix)

Examples:
  orchestrator auth init /etc/troupe
  orchestrator auth init /etc/troupe --config alpha.yaml
`
	authNodeHelp = `Usage: orchestrator auth node NAME --dir DIR [--kinds K,...]

Gives the node NAME credentials of its own, DIR/nodes/NAME.creds (printed on
stdout): the node takes NAME as its ID, may write only its own entry in the
node registry, pulls only the tasks of its kinds (any kind without --kinds)
and creates, updates and purges no stream. NAME is letters, digits, _ and -.
A name issued already keeps its key; its kinds are signed again.

Flags:
  --dir DIR       the folder of auth init (serve --store STORE: STORE/creds)
  --kinds K,...   the kinds the node may take (default any)

Examples:
  orchestrator auth node builder-2 --dir /etc/troupe
  orchestrator auth node reader-1 --dir /tmp/troupe-nats/creds --kinds explore
`
	authRevokeHelp = `Usage: orchestrator auth revoke NAME --dir DIR [--nats URL] [--config FILE]

Revokes the credentials named NAME (a node's, or a role's file: requester,
watcher, node for the shared node.creds): the account is signed again with
that user's key revoked, server.conf rewritten and the creds file removed.
With --nats (or nats.url) the new account goes to the server at once (as a
user of the system account): it closes the user's connections and refuses
it from then on. A cluster passes it on to every server. Without a server,
the revocation takes effect when the servers restart with server.conf.
Revoking a name revoked before pushes it again.

Flags:
  --dir DIR       the folder of auth init (serve --store STORE: STORE/creds)
  --nats URL      the server to tell (default nats.url; TLS from nats.tls_*)
  --config FILE   a config file over ~/.config/troupe/config.yaml

Examples:
  orchestrator auth revoke builder-2 --dir /etc/troupe --nats nats://hub:4222
  orchestrator auth revoke node --dir /tmp/troupe-nats/creds --nats nats://127.0.0.1:4222
`
	authListHelp = `Usage: orchestrator auth list --dir DIR

Lists who holds credentials of the folder: each role's file, each node's
own (its kinds), the shared node.creds of an earlier troupe, and every
revoked user with when it was revoked.

Flags:
  --dir DIR       the folder of auth init (serve --store STORE: STORE/creds)

Examples:
  orchestrator auth list --dir /etc/troupe
`
)
