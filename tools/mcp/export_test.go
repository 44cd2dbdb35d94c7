package mcp

import (
	"context"

	"github.com/troupe-ai/troupe/tools"
)

// Connect starts the server if it is not running, outside any tool call
// (tests that time a call without a process start in it).
func (s *Server) Connect(ctx context.Context) error {
	_, err := s.link(ctx)
	return err
}

// Dir is the server's working directory (the run's workspace).
func (s *Server) Dir() string { return s.cfg.Dir }

// Evictions is how many times the instance was stopped to make room.
func (s *Server) Evictions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evictions
}

// InCall reports whether the instance runs and is in a call.
func (s *Server) InCall() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live != nil && s.busy.Load() > 0
}

// InstanceOf is the instance that acts for the agent of sess.
func (s *Server) InstanceOf(sess *tools.Session) (*Server, error) { return s.instanceFor(sess) }
