package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// toolResult is the part of `tools call --json` output compared here.
type toolResult struct {
	Text      string         `json:"text"`
	IsError   bool           `json:"is_error"`
	Truncated bool           `json:"truncated"`
	Metadata  map[string]any `json:"metadata"`
}

// agree compares our result with theirs; note says how when not as sets.
func agree(q query, ours, theirs []byte) (bool, string, error) {
	var r toolResult
	if err := json.Unmarshal(ours, &r); err != nil {
		return false, "", fmt.Errorf("ours printed no JSON result: %v: %.200s", err, ours)
	}
	if r.IsError {
		return false, "", fmt.Errorf("ours failed: %s", r.Text)
	}
	if r.Truncated {
		return false, "", fmt.Errorf("our output was truncated (and spilled under the tree); lower the page size")
	}
	mine := ourKeys(q.kind, r.Text)
	their := theirKeys(q.kind, string(theirs))
	if strings.Contains(r.Text, "[more results: use offset=") {
		total, _ := r.Metadata["files"].(float64)
		return int(total) == len(their), fmt.Sprintf("totals %d vs %d; over the page size", int(total), len(their)), nil
	}
	slices.Sort(mine)
	slices.Sort(their)
	return slices.Equal(mine, their), fmt.Sprintf("%d results", len(their)), nil
}

var (
	// ourLine is "path:N: text" or "path-N- text" in content mode.
	ourLine = regexp.MustCompile(`^(.*?)([:-])(\d+)([:-]) `)
	// rgLine is "path:N:text" or "path-N-text" from rg -n.
	rgLine = regexp.MustCompile(`^(.*?)([:-])(\d+)([:-])`)
)

func ourKeys(kind, text string) []string {
	if strings.HasPrefix(text, "No matches for ") || strings.HasPrefix(text, "No files match ") {
		return nil
	}
	var keys []string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case l == "" || l == "--" || strings.HasPrefix(l, "[more results"):
			continue
		case kind == "content":
			if m := ourLine.FindStringSubmatch(l); m != nil {
				keys = append(keys, m[1]+m[2]+m[3])
			}
		case kind == "find":
			keys = append(keys, strings.TrimSuffix(l, "/"))
		default:
			keys = append(keys, l)
		}
	}
	return keys
}

func theirKeys(kind, text string) []string {
	var keys []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimPrefix(strings.TrimSuffix(l, "\r"), "./")
		switch {
		case l == "" || l == "--":
			continue
		case kind == "content":
			if m := rgLine.FindStringSubmatch(l); m != nil {
				keys = append(keys, m[1]+m[2]+m[3])
			}
		case kind == "count":
			i := strings.LastIndexByte(l, ':')
			keys = append(keys, l[:i]+": "+l[i+1:])
		case kind == "find":
			keys = append(keys, strings.TrimSuffix(l, "/"))
		default:
			keys = append(keys, l)
		}
	}
	return keys
}
