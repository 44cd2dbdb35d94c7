package actors

import "github.com/troupe-ai/troupe/configs"

// Settings are the agent-loop knobs of a run: the agent section of the
// configuration (configs.Agent).
type Settings = configs.Agent

// Approval policies for mutating tools and fan-outs.
const (
	PolicyAuto = configs.PolicyAuto
	PolicyAsk  = configs.PolicyAsk
	PolicyDeny = configs.PolicyDeny
)
