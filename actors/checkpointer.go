package actors

import (
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors/convo"
)

// checkpointer persists one agent's progress through its convo.Writer,
// from the tool-step goroutine: each tool step is saved (with its calls
// pending) before any call runs, then each call is recorded in the journal
// as it completes, and a mutating call also as it starts, so that a run
// killed at any point resumes without running a completed call again.
// Every write is one append to the agent's journal, on disk (in the page
// cache, which a kill cannot undo) before the next call that depends on it
// starts and before the next model request. Only a mutating call's start
// is fsynced before the call runs; as the journal is one file, that fsync
// also makes every record before it durable (the step, earlier results).
//
// Records from calls that complete together are written as one batch
// (group commit): a call's record waits for the write in progress, then
// its batch is written with every record queued meanwhile.
type checkpointer struct {
	w       *convo.Writer
	dir     string
	onSaved func(ck *convo.Checkpoint, path string, err error)
	log     zerolog.Logger
	bytes   *atomic.Int64 // the run's bytes written, for tests and benchmarks

	mu      sync.Mutex
	cond    *sync.Cond
	round   int                  // the round whose step is saved (0: none)
	queue   []convo.JournalEntry // waiting for the next batch
	queued  uint64               // records ever queued
	durable uint64               // records ever written (or given up on)
	sync    bool                 // a queued record asks for fsync
	writing bool
	warned  bool
}

func newCheckpointer(store convo.Store, log zerolog.Logger, bytes *atomic.Int64, onSaved func(*convo.Checkpoint, string, error)) *checkpointer {
	c := &checkpointer{w: store.Writer(), dir: store.Dir, onSaved: onSaved, log: log, bytes: bytes}
	c.cond = sync.NewCond(&c.mu)
	if err := store.Tidy(); err != nil {
		log.Warn().Err(err).Msg("remove temporary checkpoint files")
	}
	return c
}

// exclusive runs f with the writer to itself, once the write in progress
// is over, and adds what f wrote to the run's count.
func (c *checkpointer) exclusive(f func() error) error {
	c.mu.Lock()
	for c.writing {
		c.cond.Wait()
	}
	c.writing = true
	c.mu.Unlock()
	before := c.w.Written()
	err := f()
	if c.bytes != nil {
		c.bytes.Add(c.w.Written() - before)
	}
	c.mu.Lock()
	c.writing = false
	c.cond.Broadcast()
	c.mu.Unlock()
	return err
}

// begin saves ck, the checkpoint of a tool step about to run its calls;
// ck.Conversation is the live conversation, which the caller owns and
// does not change until begin returns. It is written as one journal record
// (or now and then as a snapshot, see convo.Writer) and not fsynced: what
// depends on it, a mutating call's start, is fsynced and takes it along.
// When the save fails the step runs without a journal: a resume would
// start from the previous step.
func (c *checkpointer) begin(ck *convo.Checkpoint) {
	err := c.exclusive(func() error { return c.w.Step(ck, false) })
	c.mu.Lock()
	c.round = 0
	if err == nil {
		c.round = ck.Round
	}
	c.mu.Unlock()
	c.onSaved(ck, filepath.Join(c.dir, convo.CheckpointFile), err)
}

// beginBehind is begin for a step whose calls are all replayable (see
// tools.Spec.Replayable): it reserves the writer for the step at once,
// so the records its calls make queue behind it, and returns write, which
// writes the step (once, however often it is called) and must be called
// by the step's goroutine while the calls run (tools.Executor.Meanwhile)
// and in any case before it waits for a record or changes
// ck.Conversation. Should the save fail the calls' records are dropped:
// a resume starts from the previous step and runs them again.
func (c *checkpointer) beginBehind(ck *convo.Checkpoint) (write func()) {
	c.mu.Lock()
	for c.writing {
		c.cond.Wait()
	}
	c.writing, c.round = true, ck.Round
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			before := c.w.Written()
			err := c.w.Step(ck, false)
			if c.bytes != nil {
				c.bytes.Add(c.w.Written() - before)
			}
			c.mu.Lock()
			if err != nil {
				c.round = 0
			}
			c.writing = false
			c.cond.Broadcast()
			c.mu.Unlock()
			c.onSaved(ck, filepath.Join(c.dir, convo.CheckpointFile), err)
		})
	}
}

// resume writes a resumed agent's checkpoint (its step's call records
// included) as a snapshot, fsynced, and continues that step's journal.
func (c *checkpointer) resume(ck *convo.Checkpoint) error {
	err := c.exclusive(func() error { return c.w.Snapshot(ck, true) })
	c.mu.Lock()
	c.round = 0
	if err == nil {
		c.round = ck.Round
	}
	c.mu.Unlock()
	return err
}

// close closes the journal (the agent has ended).
func (c *checkpointer) close() {
	c.mu.Lock()
	c.round = 0
	c.mu.Unlock()
	_ = c.exclusive(func() error { return c.w.Close() })
}

// record appends es to the step's journal (fsynced when sync, or when
// another record of the batch asks for it) and returns once they are on
// disk, or once writing them failed, which is logged: the run goes on, a
// resume would run those calls again.
func (c *checkpointer) record(sync bool, es ...convo.JournalEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.round == 0 || len(es) == 0 {
		return
	}
	c.queue = append(c.queue, es...)
	c.queued += uint64(len(es))
	c.sync = c.sync || sync
	mine := c.queued
	gathered := !sync
	for c.durable < mine {
		if c.writing {
			c.cond.Wait()
			continue
		}
		if c.round == 0 {
			// The step they belong to could not be saved (beginBehind).
			c.queue, c.sync, c.durable = nil, false, c.queued
			break
		}
		if !gathered {
			// Calls that start together (the executor starts them at
			// once) get their start records into this batch, and so one
			// fsync, when they are quick enough to queue now. A heuristic
			// only: a record that misses it goes in the next batch.
			gathered = true
			c.mu.Unlock()
			goruntime.Gosched()
			c.mu.Lock()
			continue
		}
		batch, upto, round, sync := c.queue, c.queued, c.round, c.sync
		c.queue, c.sync, c.writing = nil, false, true
		c.mu.Unlock()
		before := c.w.Written()
		err := c.w.Record(round, sync, batch...)
		if c.bytes != nil {
			c.bytes.Add(c.w.Written() - before)
		}
		c.mu.Lock()
		c.writing, c.durable = false, upto
		if err != nil && !c.warned {
			c.warned = true
			c.log.Warn().Err(err).Int("round", round).Msg("tool journal")
		}
		c.cond.Broadcast()
	}
}
