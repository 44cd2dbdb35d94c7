package bus

import (
	"testing"

	"github.com/troupe-ai/troupe/internal/natstest"
)

// TestMain runs the tests, or a server of a natstest cluster.
func TestMain(m *testing.M) { natstest.Main(m) }
