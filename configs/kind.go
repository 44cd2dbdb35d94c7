package configs

// Kind is a type of agent: the tools it may call, the model it runs on,
// whether it may delegate and how it is prompted. The restriction is
// enforced by the actor: a call outside Tools gets an error result.
type Kind struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description"`
	Tools       []string `yaml:"tools" json:"tools"`
	// Model names the model; "" follows ModelRole.
	Model string `yaml:"model" json:"model,omitempty"`
	// ModelRole is "cheap" (the cheapest configured model), "parent" (the
	// delegating agent's model) or "default".
	ModelRole   string `yaml:"model_role" json:"model_role,omitempty"`
	MayDelegate bool   `yaml:"may_delegate" json:"may_delegate"`
	// PlanFirst runs a planning phase (read-only tools + submit_plan)
	// before the execution phase.
	PlanFirst bool `yaml:"plan_first" json:"plan_first"`
	// Prompt is the kind's system prompt; the tool guidance is appended.
	Prompt string `yaml:"prompt" json:"prompt,omitempty"`
	// ReadOnly kinds may be delegated during a parent's planning phase.
	ReadOnly bool `yaml:"read_only" json:"read_only"`
}
