package builtin

import (
	"slices"
	"testing"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/web"
)

// Only delegate starts agents.
func TestOnlyDelegateSpawns(t *testing.T) {
	t.Parallel()
	for _, tool := range All() {
		if sp := tool.Spec(); sp.Spawns != nil && sp.Name != agent.NameDelegate {
			t.Errorf("%s spawns agents", sp.Name)
		}
	}
}

func TestWebToolsOfferedByConfig(t *testing.T) {
	t.Parallel()
	root := ForKind(KindRoot)
	for _, c := range []struct {
		cfg    Config
		kind   string
		names  []string
		has    []string
		hasNot []string
	}{
		{Config{}, KindRoot, root, []string{web.NameWebFetch}, []string{web.NameWebSearch}},
		{Config{Web: web.Config{Search: web.SearchConfig{Provider: web.SearchBrave}}}, KindWorker, ForKind(KindWorker), []string{web.NameWebFetch, web.NameWebSearch}, nil},
		{Config{Web: web.Config{NoFetch: true}}, KindRoot, root, nil, []string{web.NameWebFetch, web.NameWebSearch}},
		{Config{Web: web.Config{Search: web.SearchConfig{Provider: web.SearchBrave}}}, KindExplore, ForKind(KindExplore), nil, []string{web.NameWebFetch, web.NameWebSearch}},
		{Config{Web: web.Config{Explore: true}}, KindExplore, ForKind(KindExplore), []string{web.NameWebFetch}, []string{web.NameWebSearch}},
		{Config{Web: web.Config{Explore: true, Search: web.SearchConfig{Provider: web.SearchTavily}}}, KindExplore, ForKind(KindExplore), []string{web.NameWebFetch, web.NameWebSearch}, nil},
		// An explore kind whose own list names a web tool still needs the switch.
		{Config{}, KindExplore, []string{tools.NameReadFile, web.NameWebFetch}, nil, []string{web.NameWebFetch}},
		// Custom kinds keep what they list, when it is offered.
		{Config{}, "researcher", []string{web.NameWebFetch, web.NameWebSearch, tools.NameThink}, []string{web.NameWebFetch}, []string{web.NameWebSearch}},
	} {
		got := ForKindIn(c.cfg, c.kind, c.names)
		for _, n := range c.has {
			if !slices.Contains(got, n) {
				t.Errorf("%s under %+v lacks %s: %v", c.kind, c.cfg.Web, n, got)
			}
		}
		for _, n := range c.hasNot {
			if slices.Contains(got, n) {
				t.Errorf("%s under %+v has %s: %v", c.kind, c.cfg.Web, n, got)
			}
		}
	}
}

// The tools whose calls may start before their step is on disk (a
// resumed run runs them again): those that only read. A new read-only
// tool that acts on something (another agent, the user, a program) must
// set Spec.Effects; this list makes adding one a decision.
func TestReplayableTools(t *testing.T) {
	t.Parallel()
	want := []string{"check_agent", "find_files", "grep", "job_output", "list_dir", "read_file", "think", "todo", "web_fetch", "web_search"}
	var got []string
	for _, tool := range All() {
		if tool.Spec().Replayable() {
			got = append(got, tool.Spec().Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("replayable tools %v, want %v", got, want)
	}
}

// ForKind reads the kinds' tool sets from kindsOf without building the
// tools, so kindsOf must name every tool of All and nothing else.
func TestKindsOfNamesEveryTool(t *testing.T) {
	t.Parallel()
	var built, mapped []string
	for _, tool := range All() {
		built = append(built, tool.Spec().Name)
	}
	for name := range kindsOf {
		mapped = append(mapped, name)
	}
	slices.Sort(built)
	slices.Sort(mapped)
	if !slices.Equal(built, mapped) {
		t.Errorf("kindsOf maps %v, All builds %v", mapped, built)
	}
	var every []string
	for _, k := range []string{KindRoot, KindExplore, KindPlanner, KindWorker} {
		every = append(every, ForKind(k)...)
	}
	slices.Sort(every)
	if every = slices.Compact(every); !slices.Equal(every, built) {
		t.Errorf("the kinds' tool sets cover %v, All builds %v", every, built)
	}
}
