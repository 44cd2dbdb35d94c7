package config

import "github.com/troupe-ai/troupe/configs"

// The agent and kind sections' types are public, in configs, so that
// programs in other modules can name them; these are the same types.
type (
	Agent = configs.Agent
	Kind  = configs.Kind
)

// Approval policies for mutating tools and fan-outs.
const (
	PolicyAuto = configs.PolicyAuto
	PolicyAsk  = configs.PolicyAsk
	PolicyDeny = configs.PolicyDeny
)

// DefaultEstimates are the tokens reserved per kind when not configured.
var DefaultEstimates = configs.DefaultEstimates
