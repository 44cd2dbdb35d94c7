package watch

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/troupe-ai/troupe/messages"
)

// docMetric is one row of a metrics table of docs/metrics.md.
type docMetric struct {
	Type   string
	Labels []string // sorted
}

var (
	parenthesised = regexp.MustCompile(`\([^)]*\)`)
	backticked    = regexp.MustCompile("`([^`]+)`")
)

// docMetricsTable reads the table of docs/metrics.md that follows the
// line starting with intro: each metric's type and label names.
func docMetricsTable(t testing.TB, doc, intro string) map[string]docMetric {
	t.Helper()
	i := strings.Index(doc, "\n"+intro)
	if i < 0 {
		t.Fatalf("docs/metrics.md has no line starting %q", intro)
	}
	out := map[string]docMetric{}
	in := false
	for _, line := range strings.Split(doc[i+1:], "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		in = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue // the header and its rule
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		var labels []string
		for _, m := range backticked.FindAllStringSubmatch(parenthesised.ReplaceAllString(cells[2], ""), -1) {
			labels = append(labels, m[1])
		}
		slices.Sort(labels)
		out[name] = docMetric{Type: strings.TrimSpace(cells[1]), Labels: labels}
	}
	return out
}

// families turns gathered metric families into what the docs' tables
// say of them.
func families(fams []*dto.MetricFamily, keep func(string) bool) map[string]docMetric {
	out := map[string]docMetric{}
	for _, f := range fams {
		if !keep(f.GetName()) {
			continue
		}
		var labels []string
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		slices.Sort(labels)
		out[f.GetName()] = docMetric{Type: strings.ToLower(f.GetType().String()), Labels: labels}
	}
	return out
}

// docsMetrics is docs/metrics.md.
func docsMetrics(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs/metrics.md lists exactly the swarm's metrics the code serves, with
// their types and labels: every family a run's events, the queue and the
// registry make, gathered from the registry a scrape reads.
func TestDocsListSwarmMetrics(t *testing.T) {
	depth := int64(1)
	m := NewPromMetrics(PromOptions{Stats: func() Stats {
		return Stats{QueueDepth: &depth, Nodes: []NodeStats{{ID: "n1", Slots: 2, Free: 1}}}
	}})
	for _, ev := range promRun(t) {
		m.Apply(ev)
	}
	s := &stream{t: t}
	s.add("root", "root", messages.EvtTaskRedelivered, messages.TaskRedelivered{Agent: "explore-1", Kind: "explore", Attempt: 2})
	s.add("explore-1", "explore", messages.EvtLLMThrottled, messages.LLMThrottled{Model: "m", Phase: messages.ThrottleRefused, Status: 429})
	s.add("explore-1", "explore", messages.EvtLLMThrottled, messages.LLMThrottled{Model: "m", Phase: messages.ThrottleResumed, WaitedMS: 1500})
	s.add("explore-1", "explore", messages.EvtAgentFinished, messages.AgentEnded{Status: "completed"})
	s.add("run", "", messages.EvtRunFinished, messages.RunFinished{Status: "completed", EventsDropped: 1})
	for _, ev := range s.events {
		m.Apply(ev)
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := families(fams, func(string) bool { return true })
	want := docMetricsTable(t, docsMetrics(t), "The swarm's metrics")
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("docs/metrics.md lists %s, which the code does not serve", name)
		} else if g.Type != w.Type || !slices.Equal(g.Labels, w.Labels) {
			t.Errorf("%s: the code has %s %v, docs/metrics.md says %s %v", name, g.Type, g.Labels, w.Type, w.Labels)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is served but not in docs/metrics.md", name)
		}
	}
}
