package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/messages"
)

// Durable task records. Every task a run queues is recorded, with its
// secret and its place in the queue, in a file of the orchestrator's (one
// JSON line per queueing, written and synced before the task is queued).
// The results are stored in the results stream. A resumed run reads the
// records back: a pending delegate, called again, names the same child
// (actors names a child from its delegate call), and the child's result
// that a node stored while the orchestrator was down is taken from the
// stream, proven with the recorded secret, instead of running the task
// again. Only tasks that never finished are queued again.

// taskRecord is one queueing of a task.
type taskRecord struct {
	Agent  string `json:"agent"`
	Kind   string `json:"kind"`
	Secret string `json:"secret"`
	Seq    uint64 `json:"seq,omitempty"`
	Prior  int    `json:"prior,omitempty"`
	// Snapshot is the snapshot the task was sent: a resumed run derives
	// the stored result's changes from it (snapshot_receive.go).
	Snapshot *messages.TaskSnapshot `json:"snapshot,omitempty"`
}

// RecordsPath is where a run keeps its task records under stateDir (the
// run's state directory, actors.StateDir: the records hold the tasks'
// secrets, so they stay out of the agents' reach).
func RecordsPath(stateDir, run string) string {
	return filepath.Join(stateDir, "remote", run+".tasks.jsonl")
}

// records is a run's task record file.
type records struct {
	mu   sync.Mutex
	f    *os.File
	path string
	past map[string]taskRecord // by agent: the last record of an earlier process
}

// openRecords opens (creating) the record file at path and reads what an
// earlier process of the run recorded. A line cut off by a kill is
// skipped.
func openRecords(path string) (*records, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open task records: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open task records: %w", err)
	}
	rs := &records{f: f, path: path, past: map[string]taskRecord{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r taskRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Agent != "" && r.Secret != "" {
			rs.past[r.Agent] = r
		}
	}
	return rs, nil
}

// add records a queueing, synced.
func (rs *records) add(r taskRecord) error {
	if rs == nil {
		return nil
	}
	b, _ := json.Marshal(r)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, err := rs.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("record task %s: %w", r.Agent, err)
	}
	if err := rs.f.Sync(); err != nil {
		return fmt.Errorf("record task %s: %w", r.Agent, err)
	}
	return nil
}

// earlier is agent's last record from an earlier process of the run.
func (rs *records) earlier(agent string) (taskRecord, bool) {
	if rs == nil {
		return taskRecord{}, false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.past[agent]
	return r, ok
}

// close closes the record file; with remove (the run ended for good:
// nothing is left for a resume to take up) it deletes it too, and its
// directory once empty.
func (rs *records) close(remove bool) error {
	if rs == nil {
		return nil
	}
	_ = rs.f.Close()
	if !remove {
		return nil
	}
	if err := os.Remove(rs.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove task records: %w", err)
	}
	_ = os.Remove(filepath.Dir(rs.path)) // only when empty: other runs' records stay
	return nil
}

// reattach takes up a task an earlier process of the run queued: with
// its recorded secret, the result a node stored for it (while this run
// was down) is returned; without one, the earlier copy is taken off the
// queue, and the task will be queued again as a new message.
func (c *remoteChild) reattach(ctx context.Context) (actors.AgentResult, bool) {
	rec, ok := c.r.recs.earlier(c.task.ID)
	if !ok {
		return actors.AgentResult{}, false
	}
	c.mu.Lock()
	// Queued again, its attempts are counted on past every attempt the
	// earlier queueing may have made (as its stored results are looked
	// for): a copy of it that a node still holds, or takes from the queue
	// before this process deletes it, proves the same secret, and its
	// notices must read as an earlier queueing's, never as this one's.
	c.secret, c.prior = rec.Secret, rec.Prior+resumeAttempts
	c.task.Snapshot = rec.Snapshot // what the earlier process sent it
	c.mu.Unlock()
	r := c.r
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// Only the subjects of this queueing's attempts are read: whatever
	// else was published under the task's name meanwhile is not.
	first := rec.Prior + 1
	if m, ok := storedResult(ctx, r.o.Bus, r.o.Run, c.task.ID, rec.Secret, first, first+resumeAttempts); ok {
		if res, err := DecodeResult(m.Data); err == nil && res.Run == r.o.Run && res.Agent == c.task.ID {
			r.reattached.Add(1)
			return actors.ResultFromWire(res), true
		}
	}
	if rec.Seq > 0 {
		r.deleteTask(rec.Seq)
	}
	return actors.AgentResult{}, false
}

// provenResult says whether a stored result proves the key of the
// delivery it names, derived from the task's secret.
func provenResult(secret string, m *jetstream.RawStreamMsg) bool {
	attempt, node := signedBy(m.Header)
	return attempt >= 1 && node != "" && proven(deliveryKey(secret, attempt, node), m.Data, m.Header.Get(proofHeader))
}
