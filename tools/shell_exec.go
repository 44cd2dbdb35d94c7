package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// killGrace is how long a process group gets between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// shellRun is one command to run.
type shellRun struct {
	command   string
	dir       string
	timeout   time.Duration
	outputCap int
	envExtras []string // variables passed beyond the allow-list (config)
}

// shellOutcome is what became of it.
type shellOutcome struct {
	exitCode  int
	output    string
	total     int64 // bytes the command wrote, including any dropped
	timedOut  bool
	cancelled bool
	duration  time.Duration
}

// findShell returns bash, or sh when bash is not installed.
func findShell() (string, error) {
	if p, err := exec.LookPath("bash"); err == nil {
		return p, nil
	}
	p, err := exec.LookPath("sh")
	if err != nil {
		return "", errors.New("neither bash nor sh was found in PATH")
	}
	return p, nil
}

// exec runs the command in its own process group with stdout and stderr
// on one pipe (so their interleaving is kept) and stdin on /dev/null. On
// timeout or cancellation the group gets SIGTERM, then SIGKILL after a
// grace period. When the command ends, whatever it left running in its
// group (background jobs) is stopped the same way, so nothing outlives
// the call. The error is non-nil only when the command could not start.
func (r shellRun) exec(ctx context.Context) (shellOutcome, error) {
	sh, err := findShell()
	if err != nil {
		return shellOutcome{}, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return shellOutcome{}, fmt.Errorf("create output pipe: %w", err)
	}
	cmd := exec.Command(sh, "-c", r.command)
	cmd.Args[0] = filepath.Base(sh) // messages say "bash: ...", not the install path
	cmd.Dir = r.dir
	cmd.Env = childEnv(os.Environ(), r.envExtras)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = pw, pw // stdin stays nil: /dev/null
	start := time.Now()
	err = cmd.Start()
	_ = pw.Close() // the child holds its own copy
	if err != nil {
		_ = pr.Close()
		return shellOutcome{}, err
	}
	pgid := cmd.Process.Pid // Setpgid: the shell leads a group of its own id

	buf := newCapBuffer(r.outputCap)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		chunk := make([]byte, 32*1024)
		for {
			n, err := pr.Read(chunk)
			buf.Write(chunk[:n])
			if err != nil {
				return
			}
		}
	}()
	waitDone := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(waitDone)
	}()

	var out shellOutcome
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case <-waitDone:
	case <-timer.C:
		out.timedOut = true
	case <-ctx.Done():
		out.cancelled = true
	}
	if out.timedOut || out.cancelled {
		signalGroup(pgid, syscall.SIGTERM)
		waitOrTimeout(waitDone, killGrace)
		signalGroup(pgid, syscall.SIGKILL)
		<-waitDone
	}
	out.duration = time.Since(start)
	out.exitCode = exitCode(cmd.ProcessState)

	// Stop what the command left behind; the pipe reaches EOF once every
	// process holding it has exited.
	signalGroup(pgid, syscall.SIGTERM)
	waitOrTimeout(readDone, killGrace)
	signalGroup(pgid, syscall.SIGKILL)
	if !waitOrTimeout(readDone, killGrace) {
		// A process that left the group (setsid) still holds the pipe.
		_ = pr.Close()
		<-readDone
	} else {
		_ = pr.Close()
	}
	out.output, out.total = buf.String(), buf.total
	return out, nil
}

// signalGroup sends sig to every process of group pgid. ESRCH (the group
// is already empty) is the normal case and ignored.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// waitOrTimeout waits for ch to close, at most d; it reports whether it did.
func waitOrTimeout(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// exitCode is the exit status, or 128+signal for a process killed by a
// signal, as shells report it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// childEnvAllow are the variables a child process gets from ours: what
// shells, toolchains and terminals need, nothing that carries secrets.
// Names ending in "*" are prefixes.
var childEnvAllow = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "LANG", "LANGUAGE", "LC_*", "TERM",
	"COLORTERM", "NO_COLOR", "TZ", "TMPDIR", "COLUMNS", "LINES", "EDITOR", "PAGER", "CI",
	"GO*", "CGO_*", "CC", "CXX", "CFLAGS", "LDFLAGS", "PKG_CONFIG_PATH", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"NODE_PATH", "NVM_DIR", "PYTHONPATH", "VIRTUAL_ENV", "PYENV_ROOT", "JAVA_HOME", "MAVEN_HOME", "GRADLE_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_*", "DISPLAY"}

// secretEnvTokens, as a "_"-separated part of a name, mark it secret; the
// deny rule wins over the allow-list and the configured extras.
var secretEnvTokens = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PAT", "AUTH",
	"CREDENTIAL", "CREDENTIALS", "PRIVATE", "SESSION", "COOKIE"}

// secretEnvPrefixes are cloud credentials' variables.
var secretEnvPrefixes = []string{"AWS_", "AZURE_", "GCP_", "GOOGLE_", "CLOUDSDK_", "ARM_"}

// secretEnvName reports whether a variable's name looks like it holds a
// secret.
func secretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	for _, p := range secretEnvPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(upper, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, tok := range secretEnvTokens {
			if part == tok || (len(tok) > 5 && strings.HasSuffix(part, tok)) {
				return true
			}
		}
	}
	return false
}

func allowedEnv(name string, extras []string) bool {
	for _, a := range append(childEnvAllow, extras...) {
		if a == name || (strings.HasSuffix(a, "*") && strings.HasPrefix(name, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// childEnv builds a child process's environment from env: the allow-list
// plus the configured extras, never a name that looks secret.
func childEnv(env, extras []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if allowedEnv(name, extras) && !secretEnvName(name) {
			out = append(out, kv)
		}
	}
	return out
}

// capBuffer keeps a command's output within a byte cap: the first 60 % of
// the cap and the last 40 %, since build and test output puts its verdict
// at the end. The executor's head-and-tail truncation then cuts the kept
// text down to what the model sees.
type capBuffer struct {
	head    []byte
	headCap int
	tail    []byte // the latest bytes; trimmed to tailCap when read
	tailCap int
	total   int64
}

func newCapBuffer(limit int) *capBuffer {
	h := limit * 6 / 10
	return &capBuffer{headCap: h, tailCap: limit - h}
}

// Write appends p; it never fails.
func (b *capBuffer) Write(p []byte) {
	b.total += int64(len(p))
	if room := b.headCap - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailCap {
		// Amortized: copy down only when the slack reaches tailCap.
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailCap:]...)
	}
}

// String returns the kept output, with a marker where bytes were dropped.
func (b *capBuffer) String() string {
	tail := b.tail
	if len(tail) > b.tailCap {
		tail = tail[len(tail)-b.tailCap:]
	}
	dropped := b.total - int64(len(b.head)) - int64(len(tail))
	if dropped == 0 {
		return string(b.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes of output dropped: the command wrote %d bytes, more than the %d bytes kept ...]\n%s",
		b.head, dropped, b.total, b.headCap+b.tailCap, tail)
}
