// Package guard is the shell tool's command guard: it parses a command
// with mvdan.cc/sh, looks through wrappers (sudo, env, xargs, sh -c,
// eval, ...) and refuses commands that would wreck the machine (rm -rf
// /, mkfs, writes to devices, fork bombs), plus whatever the configured
// blocklist of regular expressions names. It is a safety net against
// accidents, not a sandbox.
package guard
