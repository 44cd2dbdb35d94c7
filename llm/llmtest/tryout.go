package llmtest

// TryOutFile is the file a try-out worker writes (see TryOut).
const TryOutFile = "troupe-scripted-change.txt"

// TryOutChangeTasks are the words that make TryOut's lead agent delegate
// a worker: the tasks of the README's recipes that change files.
var TryOutChangeTasks = []string{"Fix ", "Try ", "Refactor ", "Rename "}

// TryOut is the script `orchestrator model --scripted` serves, so every
// README recipe (a worker pool, --changes, watch, the web view, MCP) runs
// without a key. Every answer is canned and says so. The lead agent of a
// task naming a change (TryOutChangeTasks) plans, then delegates one
// worker, which plans and writes TryOutFile; any other lead agent
// delegates one explore agent, plans, and answers. An explore agent lists
// the workspace's top folder (a real tool call on real files) and reports
// one finding. A planner returns a one-step plan.
func TryOut() Script {
	plan := func(summary string) Turn {
		return Call(Tool("submit_plan", `{"summary":"`+summary+`","steps":[{"title":"`+summary+`"}]}`))
	}
	s := Script{PerRun: true}
	for _, words := range TryOutChangeTasks {
		s.Agents = append(s.Agents, AgentScript{Match: Matcher{Kind: "root", TaskContains: words}, Turns: []Turn{
			plan("delegate the change to one worker"),
			Call(Tool("delegate", `{"type":"worker","task":"Write the scripted model's change note to `+TryOutFile+`."}`)),
			Text("(scripted model) One worker wrote " + TryOutFile + "; a real model would have made the change you asked for."),
		}})
	}
	s.Agents = append(s.Agents,
		AgentScript{Match: Matcher{Kind: "root"}, Turns: []Turn{
			Call(Tool("delegate", `{"type":"explore","task":"Look around the workspace for what the task asks about."}`)),
			plan("answer from the explore agent's finding"),
			Text("(scripted model) One explore agent looked at the workspace and reported back; a real model would answer your question here."),
		}},
		AgentScript{Match: Matcher{Kind: "worker"}, Turns: []Turn{
			plan("write " + TryOutFile),
			Call(Tool("write_file", `{"path":"`+TryOutFile+`","content":"Written by a troupe worker playing the scripted model's part.\n"}`)),
			Text("(scripted model) wrote " + TryOutFile),
		}},
		AgentScript{Match: Matcher{Kind: "explore"}, Turns: []Turn{
			Call(Tool("list_dir", `{"path":"."}`)),
			Text("(scripted model) .:1 the workspace's top folder, listed; a real model would report path:line findings here."),
		}},
		AgentScript{Match: Matcher{Kind: "planner"}, Turns: []Turn{plan("one step")}},
		AgentScript{Match: Matcher{Fallback: true}, Turns: []Turn{Text("(scripted model) nothing scripted for this agent.")}},
	)
	return s
}
