package nodecmd

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// Every way of asking the node program for help prints its usage on
// stdout and exits 0, and the usage names every flag; version prints the
// version, and a wrong argument is a usage error.
func TestNodeHelp(t *testing.T) {
	var o options
	level := "info"
	newFlags(&o, &level).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(Usage, "--"+f.Name+" ") {
			t.Errorf("the usage does not name --%s", f.Name)
		}
	})
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(t.Context(), args, func(string) string { return "" }, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}, {"help", "version"}, {"version", "--help"}, {"version", "-h"},
		{"--nats", "nats://x:1", "--help"}} {
		code, out, errs := run(args...)
		if code != 0 || out != Usage || errs != "" {
			t.Errorf("%v: exit %d, stdout %.40q, stderr %q", args, code, out, errs)
		}
	}
	if code, out, _ := run("version"); code != 0 || !strings.HasPrefix(out, "node ") || !strings.Contains(out, " go1.") {
		t.Errorf("version: exit %d %q", code, out)
	}
	if code, _, errs := run("bogus"); code != 2 || !strings.Contains(errs, `unexpected argument "bogus"`) {
		t.Errorf("bogus: exit %d %q", code, errs)
	}
	if code, _, errs := run("--no-such-flag"); code != 2 || !strings.Contains(errs, "no-such-flag") {
		t.Errorf("unknown flag: exit %d %q", code, errs)
	}
}
