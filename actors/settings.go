package actors

import "github.com/troupe-ai/troupe/internal/config"

// Settings are the agent-loop knobs of a run (config.Agent).
type Settings = config.Agent

// Approval policies for mutating tools and fan-outs.
const (
	PolicyAuto = config.PolicyAuto
	PolicyAsk  = config.PolicyAsk
	PolicyDeny = config.PolicyDeny
)
