package mcp

import "context"

// Connect starts the server if it is not running, outside any tool call
// (tests that time a call without a process start in it).
func (s *Server) Connect(ctx context.Context) error {
	_, err := s.link(ctx)
	return err
}
