package sandbox

import (
	"sync"

	"github.com/rs/zerolog"
)

// Read-only trees beneath a writable one (.git, .troupe) are best kept by
// binding them read-only in a mount namespace of the command's own; where
// that cannot be done, Landlock's grants are split around them instead
// (readonly.go), which holds them as well but takes the workspace's top
// folder's own write rights away from commands. That fallback used to be
// silent, and hid a bug behind it; so the first time a process takes it,
// it says why, once, on the logger SetLogger gave, and HolesFallback (and
// Check's Support) keep the reason for whoever asks. The state is the
// process's: the warning is once per process, whoever starts the command.

var fellBack struct {
	mu     sync.Mutex
	why    string // the first reason; "" while every tree was bound
	log    zerolog.Logger
	set    bool // log was given
	warned bool
}

// SetLogger is where the sandbox warns, once per process, that read-only
// trees are kept by Landlock alone (see HolesFallback). Programs call it
// with their logger; until then a reason is kept and warned about when
// it is called.
func SetLogger(log zerolog.Logger) {
	fellBack.mu.Lock()
	defer fellBack.mu.Unlock()
	fellBack.log, fellBack.set = log, true
	warnLocked()
}

// HolesFallback is why a command of this process had its write grants
// split around read-only trees instead of those trees bound read-only
// (the first reason), "" when none has.
func HolesFallback() string {
	fellBack.mu.Lock()
	defer fellBack.mu.Unlock()
	return fellBack.why
}

// noteFallback records that a command's read-only trees are kept by
// Landlock alone, and why; the first time, it warns.
func noteFallback(why string) {
	fellBack.mu.Lock()
	defer fellBack.mu.Unlock()
	if fellBack.why == "" {
		fellBack.why = why
	}
	warnLocked()
}

func warnLocked() {
	if fellBack.warned || !fellBack.set || fellBack.why == "" {
		return
	}
	fellBack.warned = true
	fellBack.log.Warn().Str("why", fellBack.why).Msg("sandbox: .git and .troupe are kept read-only by Landlock alone, not bound read-only: " +
		"commands cannot create, rename or remove entries directly in the workspace's top folder")
}
