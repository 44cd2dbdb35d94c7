package shell

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed job_kill.md
var jobKillDoc string

// JobKillParams are job_kill's arguments.
type JobKillParams struct {
	JobID string `json:"job_id" jsonschema:"the job ID shell returned (j1, j2, ...)"`
}

// JobKill returns the job_kill tool.
func JobKill() tools.Tool {
	return tools.New(tools.Spec{Name: NameJobKill, Description: jobKillDoc, ReadOnly: false,
		Parallel: tools.ParallelSafe, Tier: tools.TierAlways, Truncation: tools.HeadAndTail(30*1024, 0.4), Timeout: time.Minute},
		runJobKill)
}

func runJobKill(ctx context.Context, s *tools.Session, p JobKillParams) (tools.Result, error) {
	j, bad := shellsOf(s).jobs.get(NameJobKill, p.JobID)
	if bad != nil {
		return *bad, nil
	}
	j.mu.Lock()
	already := j.exited
	j.mu.Unlock()
	if !already {
		j.stop(NameJobKill)
		select {
		case <-j.done:
		case <-ctx.Done():
			return tools.Errorf("job_kill: cancelled while stopping job %s", j.id), nil
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	text := fmt.Sprintf("[job %s: %s]\n", j.id, j.stateLocked())
	if already {
		text = fmt.Sprintf("[job %s had already ended: %s]\n", j.id, j.stateLocked())
	}
	news := j.unread.total
	if news > 0 {
		text += j.unread.String()
		if text[len(text)-1] != '\n' {
			text += "\n"
		}
		j.unread = newCapBuffer(jobUnreadCap)
	}
	j.reported = true
	return tools.Text(text).WithMeta("job_id", j.id).WithMeta("exit_code", j.exitCode).WithMeta("new_bytes", news), nil
}
