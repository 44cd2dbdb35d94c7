package procsec

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// NoDump turns the flag off, in a process of its own (the test binary
// re-run), so that the test process itself stays as it was.
func TestNoDump(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if os.Getenv("PROCSEC_CHILD") == "1" {
		if err := NoDump(); err != nil {
			t.Fatal(err)
		}
		d, err := Dumpable()
		if err != nil || d {
			t.Fatalf("still dumpable: %v %v", d, err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNoDump$", "-test.v")
	cmd.Env = append(os.Environ(), "PROCSEC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNoDump") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if d, _ := Dumpable(); !d {
		t.Error("the test process lost its flag")
	}
}
