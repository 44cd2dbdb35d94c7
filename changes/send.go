package changes

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-ai/troupe/workspace"
)

// Sender takes the snapshots of a run's workspace that its remote tasks
// carry: each a snapshot taken after the task was placed (so it holds
// the parent's edits made before it delegated), the tasks placed while
// one is being taken sharing the next (a burst of delegations costs two
// snapshots, not one each), and a state taken before (same base, same
// tree) answered with its first snapshot, whose objects are stored and
// which nodes may hold. Storing a new state's objects is the
// transport's (store, which returns their digest).
type Sender struct {
	root, dataDir string
	store         func(ctx context.Context, repo *workspace.Repo, snap workspace.Snapshot) (string, error)

	mu     sync.Mutex
	repo   *workspace.Repo
	off    error                         // why tasks carry no snapshot (no git), once known
	sent   map[string]string             // snapshot commit → the digest store returned
	states map[string]workspace.Snapshot // "base tree" → the snapshot first taken of that state

	snaps coalesced[Sent]

	taken  atomic.Int64 // snapshots of the workspace taken
	waited atomic.Int64 // nanoseconds callers waited for their snapshot, summed
}

// Sent is a snapshot a task carries and the digest of its stored objects.
type Sent struct {
	Snap   workspace.Snapshot
	Digest string
}

// NewSender is the Sender of the workspace root (its worktrees' data in
// dataDir); its takes are bound to ctx, the run's.
func NewSender(ctx context.Context, root, dataDir string,
	store func(ctx context.Context, repo *workspace.Repo, snap workspace.Snapshot) (string, error)) *Sender {
	s := &Sender{root: root, dataDir: dataDir, store: store, sent: map[string]string{}, states: map[string]workspace.Snapshot{}}
	s.snaps = coalesced[Sent]{ctx: ctx, do: s.take}
	return s
}

// Take returns a snapshot taken after the call began (see Sender);
// workspace.ErrNoGit when the workspace has no git to snapshot with.
func (s *Sender) Take(ctx context.Context) (Sent, error) {
	defer func(t time.Time) { s.waited.Add(int64(time.Since(t))) }(time.Now())
	return s.snaps.get(ctx)
}

// Sent returns the repository that holds commit when the run sent it.
func (s *Sender) Sent(commit string) (*workspace.Repo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repo, s.sent[commit] != "" && s.repo != nil
}

// Counts are the snapshots taken and how long callers waited for theirs,
// summed (a benchmark's figures).
func (s *Sender) Counts() (taken int64, waited time.Duration) {
	return s.taken.Load(), time.Duration(s.waited.Load())
}

// open returns the workspace's repository, opened the first time.
func (s *Sender) open(ctx context.Context) (*workspace.Repo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off != nil {
		return nil, s.off
	}
	if s.repo == nil {
		repo, err := workspace.Open(ctx, s.root, workspace.Options{DataDir: s.dataDir})
		if errors.Is(err, workspace.ErrNoGit) {
			s.off = err
		}
		if err != nil {
			return nil, err
		}
		s.repo = repo
	}
	return s.repo, nil
}

// take snapshots the workspace and stores a new state's objects.
func (s *Sender) take(ctx context.Context) (Sent, error) {
	repo, err := s.open(ctx)
	if err != nil {
		return Sent{}, err
	}
	snap, err := repo.Snapshot(ctx)
	s.taken.Add(1)
	if err != nil {
		return Sent{}, err
	}
	state := snap.Base + " " + snap.Tree
	s.mu.Lock()
	known, ok := s.states[state]
	digest := s.sent[known.Commit]
	s.mu.Unlock()
	if ok {
		return Sent{Snap: known, Digest: digest}, nil
	}
	if digest, err = s.store(ctx, repo, snap); err != nil {
		return Sent{}, err
	}
	s.mu.Lock()
	s.sent[snap.Commit], s.states[state] = digest, snap
	s.mu.Unlock()
	return Sent{Snap: snap, Digest: digest}, nil
}
