package actors

import (
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

// The built-in kinds' tool sets are derived from the tools' declarations:
// explore and planner get exactly the read-only tools declared for them,
// workers every file, search and shell tool, the root everything; only
// the root gets the delegation tools.
func TestKindToolsDerivedFromSpecs(t *testing.T) {
	want := map[string]string{
		KindExplore: "find_files,grep,list_dir,read_file,think",
		KindPlanner: "find_files,grep,list_dir,read_file,submit_plan,think",
		KindWorker:  "apply_patch,ask_user,edit_file,find_files,grep,job_kill,job_output,list_dir,read_file,shell,think,todo,write_file",
		KindRoot:    "apply_patch,ask_user,cancel_agent,check_agent,delegate,edit_file,find_files,grep,job_kill,job_output,list_dir,read_file,send_input,shell,submit_plan,think,todo,write_file",
	}
	known := tools.NewRegistry(tools.All()...)
	for name, k := range BuiltinKinds() {
		if got := strings.Join(k.Tools, ","); got != want[name] {
			t.Errorf("%s: %s, want %s", name, got, want[name])
		}
		for _, tn := range k.Tools {
			tool, _ := known.Get(tn)
			if !slices.Contains(tool.Spec().Kinds, name) {
				t.Errorf("%s has %s, which does not declare it", name, tn)
			}
			if k.ReadOnly && !tool.Spec().ReadOnly {
				t.Errorf("read-only kind %s has mutating %s", name, tn)
			}
		}
	}
	if got := strings.Join(DelegationTools, ","); got != "cancel_agent,check_agent,delegate,send_input" {
		t.Errorf("delegation tools %s", got)
	}
	if got := strings.Join(tools.MutatingToolNames(), ","); got != "apply_patch,edit_file,job_kill,shell,write_file" {
		t.Errorf("mutating tools %s", got)
	}
}
