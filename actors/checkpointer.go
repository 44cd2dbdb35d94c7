package actors

import (
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/convo"
)

// checkpointer persists one agent's progress in its convo.Store, from the
// tool-step goroutine. Every tool step first saves the checkpoint with the
// step's calls pending (before any call runs), then records each call as
// it completes (mutating calls also when they start) in the journal, so
// that a run killed at any point resumes without running a completed call
// again. Both are synchronous: a result is on disk before the next call
// that depends on it starts and before the next model request. Writes
// that a side effect depends on are also fsynced (see convo.Store).
//
// Records from calls that complete together are written as one batch
// (group commit): a call's record waits for the write in progress, then
// its batch is written with every record queued meanwhile.
type checkpointer struct {
	store   convo.Store
	onSaved func(ck *convo.Checkpoint, path string, err error)
	log     zerolog.Logger

	saving sync.Mutex // one checkpoint write at a time

	mu      sync.Mutex
	cond    *sync.Cond
	round   int                  // the round whose journal is open (0: none)
	queue   []convo.JournalEntry // waiting for the next batch
	queued  uint64               // records ever queued
	durable uint64               // records ever written (or given up on)
	sync    bool                 // a queued record asks for fsync
	writing bool
	warned  bool
}

func newCheckpointer(store convo.Store, log zerolog.Logger, onSaved func(*convo.Checkpoint, string, error)) *checkpointer {
	c := &checkpointer{store: store, onSaved: onSaved, log: log}
	c.cond = sync.NewCond(&c.mu)
	if err := store.Tidy(); err != nil {
		log.Warn().Err(err).Msg("remove temporary checkpoint files")
	}
	return c
}

// begin saves ck, the checkpoint of a tool step about to run its calls
// (fsynced when sync: the step has mutating calls), and opens the journal
// of ck's round (clearing the previous round's, whose results ck now
// holds). When the save fails the step runs without a journal: a resume
// would start from the previous checkpoint.
func (c *checkpointer) begin(ck *convo.Checkpoint, sync bool) {
	c.saving.Lock()
	err := c.store.Save(ck, sync)
	if err == nil {
		if cerr := c.store.ClearJournal(); cerr != nil {
			c.log.Warn().Err(cerr).Msg("clear tool journal")
		}
	}
	c.saving.Unlock()
	c.mu.Lock()
	c.round = 0
	if err == nil {
		c.round = ck.Round
	}
	c.mu.Unlock()
	c.onSaved(ck, filepath.Join(c.store.Dir, convo.CheckpointFile), err)
}

// reopen continues the journal of round, whose checkpoint is already on
// disk (a resumed tool step).
func (c *checkpointer) reopen(round int) {
	c.mu.Lock()
	c.round = round
	c.mu.Unlock()
}

// record writes es to the open journal (fsynced when sync, or when
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
	for c.durable < mine {
		if c.writing {
			c.cond.Wait()
			continue
		}
		batch, upto, round, sync := c.queue, c.queued, c.round, c.sync
		c.queue, c.sync, c.writing = nil, false, true
		c.mu.Unlock()
		err := c.store.Record(round, sync, batch...)
		c.mu.Lock()
		c.writing, c.durable = false, upto
		if err != nil && !c.warned {
			c.warned = true
			c.log.Warn().Err(err).Int("round", round).Msg("tool journal")
		}
		c.cond.Broadcast()
	}
}
