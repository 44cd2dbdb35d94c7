package main

import "encoding/json"

// findingsIn reads the path:line findings of an explore agent's
// agent.finished event.
func findingsIn(data json.RawMessage) []string {
	var d struct {
		Findings []string `json:"findings"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	return d.Findings
}
