// Package sandbox confines the programs the tools start (shell commands,
// background jobs, shell sessions, stdio MCP servers) with the kernel's
// own mechanisms, so that what a command may touch no longer depends on
// the shell guard understanding the command.
//
// A confined command is started from an OS thread of its own that is
// confined first (see Start): the fork inherits the thread's Landlock
// domain, seccomp filter, no_new_privs and network namespace, so nothing
// the command does afterwards can widen them. Where the process may not
// make network namespaces itself (an ordinary user), a command with
// network deny or loopback starts instead through a launcher: our own
// binary re-executed (/proc/self/exe) with a marker argv[0] in new user
// and network namespaces. Every program that starts confined commands
// calls MaybeRunLauncher first thing in main (and a test binary in
// TestMain). The launcher reads the Policy from its environment (paths
// and switches only, never a secret), removes it, applies the confinement
// to itself and execve's the real program, which inherits it. A user
// other than root, mapped to itself in the new user namespace, would
// hold no capability there after its exec: its launcher keeps
// CAP_NET_ADMIN (loopback) and CAP_SYS_ADMIN (the read-only binds) as
// ambient capabilities of that namespace for its setup and drops them
// before it execs the command. A program that made itself non-dumpable
// (procsec.NoDump) is dumpable while it starts a launcher, since it
// writes the launcher's ID maps (procsec.WhileDumpable). On either
// path a command gets:
//
//   - Landlock (ABI 1 and later; rights the kernel lacks are dropped, not
//     faked): writes only beneath Policy.Writable (the workspace or
//     worktree, the command's private TMPDIR, sandbox.writable); reads and
//     executes everywhere except beneath Policy.DenyRead. Landlock only
//     grants, it cannot subtract, so "everything except" is built as a
//     grant on every sibling of each denied path and of each of its
//     ancestors, down from "/". Directory listings stay allowed everywhere
//     (a name in ~/.ssh can be seen, its contents cannot be read).
//     Signals and abstract UNIX sockets are scoped to the sandbox (ABI 6):
//     a command cannot signal the orchestrator.
//   - network: allow leaves it as it is; deny and loopback start the
//     command in a network namespace of its own (one per Box, shared by
//     its commands, where this process can make it; else one per command,
//     inside a user namespace): deny has no interface up, loopback has
//     its own lo up, so servers the box's commands start are reachable,
//     but the host's loopback and everything beyond are not. Where the ABI has
//     them, deny also refuses every TCP bind and connect by Landlock.
//   - no_new_privs, capabilities beyond the ordinary file ones taken out
//     of the bounding set (a root command keeps chown and DAC override but
//     loses CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_PTRACE ...), and a
//     seccomp filter that answers EPERM to ptrace, mount and the new mount
//     API, kernel modules, kexec, keyrings, bpf, reboot, swap, unshare,
//     setns, namespace flags to clone, TIOCSTI and similar calls.
//
// Check reports what the kernel supports; Missing names what a policy
// asks for and this kernel cannot enforce, for the one warning line (or
// the refusal when sandbox.required is set). Read-only trees beneath a
// writable one that cannot be bound read-only (no mount namespace, or a
// launcher that cannot bind in its user namespace, found by starting one
// that must) are kept by Landlock's split grants: said once per process
// on the logger SetLogger gave, and in Check's Support.HolesFallback
// (fallback.go, bindprobe_linux.go).
package sandbox
