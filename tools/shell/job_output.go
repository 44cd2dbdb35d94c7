package shell

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed job_output.md
var jobOutputDoc string

// JobOutputParams are job_output's arguments.
type JobOutputParams struct {
	JobID string `json:"job_id" jsonschema:"the job ID shell returned (j1, j2, ...)"`
	Tail  int    `json:"tail,omitempty" jsonschema:"show the last N lines of the job's output instead of the new output since your last read"`
	Wait  int    `json:"wait,omitempty" jsonschema:"seconds to wait for new output or for the job to end when there is none yet (default 0, max 300)"`
}

// JobOutput returns the job_output tool.
func JobOutput() tools.Tool {
	return tools.New(tools.Spec{
		Guidance: []tools.GuidanceLine{{Section: tools.SectionWhichTool, Order: 52, Text: func(has func(...string) bool) string {
			if !has(NameShell, NameJobKill) {
				return ""
			}
			return "Start long-running processes (a dev server, a watcher) with shell background: true, then read them with job_output (wait: N instead of polling) and stop them with job_kill."
		}}},
		Name: NameJobOutput, Description: jobOutputDoc, ReadOnly: true, Polls: true,
		Parallel: tools.ParallelSafe, Tier: tools.TierAlways, Truncation: tools.HeadAndTail(30*1024, 0.4), Timeout: 6 * time.Minute},
		runJobOutput, tools.Minimum("tail", 1), tools.Maximum("tail", 10000), tools.Minimum("wait", 0), tools.Maximum("wait", 300))
}

func runJobOutput(ctx context.Context, s *tools.Session, p JobOutputParams) (tools.Result, error) {
	j, bad := shellsOf(s).jobs.get(NameJobOutput, p.JobID)
	if bad != nil {
		return *bad, nil
	}
	if p.Wait > 0 {
		j.waitNews(ctx, time.Duration(p.Wait)*time.Second)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var b strings.Builder
	news := j.unread.total
	if p.Tail > 0 {
		fmt.Fprintf(&b, "[job %s: %s; last %d lines of %d bytes of output]\n", j.id, j.stateLocked(), p.Tail, j.total)
		b.WriteString(lastLines(j.tail, p.Tail))
	} else {
		fmt.Fprintf(&b, "[job %s: %s]\n", j.id, j.stateLocked())
		if news == 0 {
			b.WriteString("(no new output)\n")
		} else {
			b.WriteString(j.unread.String())
		}
	}
	j.unread = newCapBuffer(jobUnreadCap)
	if j.exited {
		j.reported = true
	}
	r := tools.Text(b.String()).WithMeta("job_id", j.id).WithMeta("running", !j.exited).
		WithMeta("new_bytes", news).WithMeta("total_bytes", j.total)
	if j.exited {
		r = r.WithMeta("exit_code", j.exitCode)
	}
	return r, nil
}

// waitNews waits up to d for output not read yet, or for the job to end.
func (j *job) waitNews(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		j.mu.Lock()
		ready := j.unread.total > 0 || (j.exited && !j.reported)
		changed := j.changed
		j.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// lastLines returns the last n lines of b (a final line without a line
// end counts).
func lastLines(b []byte, n int) string {
	if len(b) > jobTailCap {
		b = b[len(b)-jobTailCap:]
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	i := end
	for k := 0; k < n && i > 0; k++ {
		i = bytes.LastIndexByte(b[:i], '\n')
		if i < 0 {
			i = 0
			break
		}
	}
	if i > 0 {
		i++ // past the line end
	}
	return string(b[i:])
}
