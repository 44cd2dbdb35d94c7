package shell

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

// validSessionName reports whether name may name a shell session.
var sessionNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

func validSessionName(name string) bool { return sessionNameRE().MatchString(name) }

// runInSession runs p.Command in the named session, starting the
// session's shell when it has none (or the last one ended).
func runInSession(ctx context.Context, s *tools.Session, p ShellParams, dir string) (tools.Result, error) {
	st := shellsOf(s)
	procs := procsOf(s)
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return tools.Errorf("shell: this agent has ended; its sessions are closed"), nil
	}
	sh := st.sessions[p.Session]
	fresh := false
	if sh == nil {
		if len(st.sessions) >= maxShellSessions {
			names := make([]string, 0, len(st.sessions))
			for n := range st.sessions {
				names = append(names, n)
			}
			st.mu.Unlock()
			return tools.Errorf("shell: you already have %d sessions (%s), the most an agent may have; reuse one, or close one by running exit in it", maxShellSessions, strings.Join(slices.Sorted(slices.Values(names)), ", ")), nil
		}
		var err error
		sh, err = startShellSession(p.Session, s.Workspace, procs, starterOf(s), configOf(s).Env)
		if err != nil {
			st.mu.Unlock()
			return tools.Errorf("shell: session %q could not be started: %v", p.Session, err), nil
		}
		if st.sessions == nil {
			st.sessions = map[string]*shellSession{}
		}
		st.sessions[p.Session] = sh
		fresh = true
	}
	st.mu.Unlock()

	timeout := DefaultShellTimeout
	if p.Timeout > 0 {
		timeout = time.Duration(p.Timeout) * time.Second
	}
	sh.mu.Lock()
	out, err := sh.run(ctx, p.Command, dir, timeout, shellOutputCap)
	sh.mu.Unlock()
	if err != nil {
		return tools.Errorf("shell: session %q: %v", p.Session, err), nil
	}
	if out.closed {
		sh.close()
		st.mu.Lock()
		if st.sessions[p.Session] == sh {
			delete(st.sessions, p.Session)
		}
		st.mu.Unlock()
	}
	r := out.result(timeout)
	for _, n := range out.notes {
		if !strings.HasSuffix(r.Text, "\n") {
			r.Text += "\n"
		}
		r.Text += "[" + n + "]\n"
	}
	r = r.WithMeta("session", p.Session).WithMeta("session_started", fresh)
	if !out.closed {
		r = r.WithMeta("cwd", out.cwd)
	}
	return r, nil
}

// startJob starts p.Command as a background job in dir.
func startJob(s *tools.Session, p ShellParams, dir string) tools.Result {
	st := shellsOf(s)
	st.mu.Lock()
	closed := st.closed
	st.mu.Unlock()
	if closed {
		return tools.Errorf("shell: this agent has ended; no job can start")
	}
	var timeout time.Duration
	if p.Timeout > 0 {
		timeout = time.Duration(p.Timeout) * time.Second
	}
	j, err := st.jobs.start(procsOf(s), starterOf(s), s.Workspace, p.Command, dir, timeout, configOf(s).Env)
	if err != nil {
		return tools.Errorf("shell: the background job could not be started: %v", err)
	}
	limit := "until you finish or stop it with job_kill"
	if timeout > 0 {
		limit = fmt.Sprintf("for at most %d s, or until you finish or stop it with job_kill", p.Timeout)
	}
	where := j.dir
	if where == "." {
		where = "the workspace root"
	}
	text := fmt.Sprintf("[job %s started]\nRunning in %s %s. Read its output with job_output {\"job_id\": %q} (add \"wait\": N to wait up to N seconds for output); it is listed in your context while it runs.\n",
		j.id, where, limit, j.id)
	return tools.Text(text).WithMeta("job_id", j.id).WithMeta("pid", j.pid)
}
