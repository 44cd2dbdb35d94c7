package actors

import (
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/web"
)

// The built-in kinds' tool sets are derived from the tools' declarations:
// explore and planner get exactly the read-only tools declared for them,
// workers every file, search, shell and web tool, the root everything;
// only the root gets the delegation tools. (The web tools are then fitted
// to the configuration: TestKindsUnderToolConfig.)
func TestKindToolsDerivedFromSpecs(t *testing.T) {
	want := map[string]string{
		KindExplore: "find_files,grep,list_dir,read_file,think",
		KindPlanner: "find_files,grep,list_dir,read_file,submit_plan,think",
		KindWorker:  "apply_patch,ask_user,edit_file,find_files,grep,job_kill,job_output,list_dir,read_file,shell,think,todo,web_fetch,web_search,write_file",
		KindRoot:    "apply_patch,ask_user,cancel_agent,check_agent,delegate,edit_file,find_files,grep,job_kill,job_output,list_dir,read_file,send_input,shell,submit_plan,think,todo,web_fetch,web_search,write_file",
	}
	known := tools.NewRegistry(builtin.All()...)
	for name, k := range BuiltinKinds() {
		if got := strings.Join(k.Tools, ","); got != want[name] {
			t.Errorf("%s: %s, want %s", name, got, want[name])
		}
		for _, tn := range k.Tools {
			tool, _ := known.Get(tn)
			if !slices.Contains(builtin.KindsOf(tn), name) {
				t.Errorf("%s has %s, which does not declare it", name, tn)
			}
			if k.ReadOnly && !tool.Spec().ReadOnly {
				t.Errorf("read-only kind %s has mutating %s", name, tn)
			}
		}
	}
	if got := strings.Join(DelegationTools(), ","); got != "cancel_agent,check_agent,delegate,send_input" {
		t.Errorf("delegation tools %s", got)
	}
	if got := strings.Join(builtin.MutatingToolNames(), ","); got != "apply_patch,edit_file,job_kill,shell,write_file" {
		t.Errorf("mutating tools %s", got)
	}
}

// Under the default configuration root and workers get web_fetch and no
// web_search (no provider), explore agents neither; a provider adds
// web_search, tools.web.explore gives explore agents both.
func TestKindsUnderToolConfig(t *testing.T) {
	kinds := BuiltinKinds()
	webOf := func(k Kind) string {
		var out []string
		for _, n := range k.Tools {
			if strings.HasPrefix(n, "web_") {
				out = append(out, n)
			}
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		cfg                  web.Config
		root, worker, explor string
	}{
		{web.Config{}, "web_fetch", "web_fetch", ""},
		{web.Config{Search: web.SearchConfig{Provider: web.SearchBrave}}, "web_fetch,web_search", "web_fetch,web_search", ""},
		{web.Config{Explore: true, Search: web.SearchConfig{Provider: web.SearchSearXNG}}, "web_fetch,web_search", "web_fetch,web_search", "web_fetch,web_search"},
		{web.Config{NoFetch: true, Explore: true}, "", "", ""},
	} {
		ks := kindsUnder(kinds, builtin.Config{Web: c.cfg})
		if got := webOf(ks[KindRoot]) + "|" + webOf(ks[KindWorker]) + "|" + webOf(ks[KindExplore]); got != c.root+"|"+c.worker+"|"+c.explor {
			t.Errorf("%+v: root|worker|explore web tools %s, want %s|%s|%s", c.cfg, got, c.root, c.worker, c.explor)
		}
		if webOf(ks[KindPlanner]) != "" {
			t.Errorf("%+v: planner has %s", c.cfg, webOf(ks[KindPlanner]))
		}
	}
	if webOf(kinds[KindRoot]) != "web_fetch,web_search" {
		t.Error("kindsUnder changed the map it was given")
	}
}
