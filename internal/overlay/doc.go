// Package overlay gives each worker a tree of its own that costs what it
// touches: an overlay mount of one shared, read-only lower directory
// with an empty upper and work directory per mount, inside a private
// user and mount namespace.
//
// The namespaces belong to a holder: this program started again (its
// argv[0] is holderArg0; MaybeRunHolder runs it) in new user and mount
// namespaces, the caller's user and group mapped to themselves. It
// mounts and unmounts on request, read as messages from its stdin (a
// socket, so a descriptor can ride with a message), and ends when its
// stdin closes or its parent dies; its mounts vanish with it, the upper
// directories stay on disk. It mounts by descriptor (mount_linux.go):
// every layer and the mount point opened beneath a trusted root without
// following a symlink, and answers with the mount's root directory,
// open, through which the caller reaches the view and unmounts it. A
// holder of a user other than root keeps, as ambient capabilities in
// its namespace, what overlayfs needs there. Nothing outside the holder's
// namespace sees a mount: a mount point is an empty directory there.
// The caller reaches a mount's merged view through /proc/<holder>/root
// (View), and a command is started inside the holder's namespaces, at
// the mount point, by nsenter (Enter): util-linux nsenter, because a Go
// process, being multithreaded, cannot join a user namespace itself.
// Root's commands run there without capabilities (setpriv): every
// worktree's mount is in the one holder namespace.
//
// What this kernel and machine allow is probed once (Available): a
// holder started and a test overlay mounted, read and written through
// its view, nsenter found. Where it fails, callers fall back to a plain
// checkout.
package overlay
