package cluster

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the first token of every troupe subject.
const DefaultPrefix = "troupe"

func budgetSubject(prefix, run, op string) string { return prefix + ".budget." + run + "." + op }

func taskSubject(prefix, kind string) string { return prefix + ".task." + kind }

func resultSubject(prefix, run, agent string) string { return prefix + ".result." + run + "." + agent }

// ctlSubject is <prefix>.ctl.<run>.<op> for the whole run (agent "") or
// <prefix>.ctl.<run>.<agent>.<op> for one agent.
func ctlSubject(prefix, run, agent, op string) string {
	if agent == "" {
		return prefix + ".ctl." + run + "." + op
	}
	return prefix + ".ctl." + run + "." + agent + "." + op
}

// checkToken refuses a value that cannot be one subject token.
func checkToken(what, s string) error {
	if s == "" || strings.ContainsAny(s, ". *>\t\r\n") {
		return fmt.Errorf("%s %q cannot be a NATS subject token", what, s)
	}
	return nil
}
