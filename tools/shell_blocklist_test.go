package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShellBlocklist(t *testing.T) {
	t.Parallel()
	rules, err := compileBlocklist(DefaultShellBlocklist)
	if err != nil {
		t.Fatal(err)
	}
	blocked := map[string]string{
		"rm -rf /":                        "rm_root",
		"rm -fr /":                        "rm_root",
		"rm -rf /*":                       "rm_root",
		"rm -rf --no-preserve-root /":     "rm_root",
		"rm   -rf    /  ":                 "rm_root",
		"sudo rm -rf /":                   "rm_root",
		"cd x && rm -r -f /":              "rm_root",
		"/bin/rm -rf /":                   "rm_root",
		"rm -rf / --no-preserve-root":     "rm_root",
		`rm -rf "/"`:                      "rm_root",
		"rm -rf ./build /":                "rm_root",
		"echo hi\nrm -rf /\n":             "rm_root",
		`bash -c "rm -rf /"`:              "rm_root",
		"sh -c 'rm -rf /*'":               "rm_root",
		"x=$(rm -rf /)":                   "rm_root",
		"`mkfs.ext4 /dev/sdb`":            "mkfs",
		"mkfs /dev/sda1":                  "mkfs",
		"mkfs.ext4 /dev/sda1":             "mkfs",
		"sudo /sbin/mkfs.vfat -F 32 x":    "mkfs",
		"echo x > /dev/sda":               "write_to_device",
		"cat img >> /dev/sdb1":            "write_to_device",
		"echo x >/dev/nvme0n1":            "write_to_device",
		"echo x >| /dev/sda":              "write_to_device",
		`echo x > "/dev/sda"`:             "write_to_device",
		"echo x > /dev/nul":               "write_to_device",
		"echo x > /dev/nullx":             "write_to_device",
		"echo x &> /dev/mem":              "write_to_device",
		"dd if=/dev/zero of=/dev/sda":     "write_to_device",
		"dd if=img of=/dev/mmcblk0 bs=4M": "write_to_device",
	}
	for cmd, want := range blocked {
		if got := blockedBy(rules, cmd); got != want {
			t.Errorf("%q: blocked by %q, want %q", cmd, got, want)
		}
	}
	allowed := []string{
		"rm -rf ./build", "rm -rf build/", "rm -rf /tmp/troupe-x", "rm -r ./a ./b",
		"echo x > /dev/null", "make 2>/dev/null", "make &>/dev/null", "cmd >/dev/null 2>&1",
		"echo err > /dev/stderr", "echo out >/dev/stdout", "echo hi > /dev/tty",
		"dd if=/dev/zero of=out.img bs=1k count=1", "dd if=/dev/sda of=disk.img",
		"ls /", "cd / && ls", "rm -rf ./build; cd /", "rm x && ls /", "grep -r mkfsx .",
		"echo mkfs_helper", "cat < /dev/urandom | head -c 4", "go test ./... 2>&1 | tail",
	}
	for _, cmd := range allowed {
		if got := blockedBy(rules, cmd); got != "" {
			t.Errorf("%q wrongly blocked by %s", cmd, got)
		}
	}
}

// A refused command is an error result naming the rule, and nothing runs.
func TestShellBlocklistRefusesWithoutRunning(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	// Harmless if the blocklist failed: no such program.
	r := shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; mkfs.troupe-none /dev/null"})
	if !r.IsError || r.Metadata["blocked_by"] != "mkfs" {
		t.Fatalf("not refused: %s", r.Text)
	}
	golden(t, "shell/blocked", r.Text)

	s.Config.ShellBlocklist = []string{`\bforbidden\b`}
	r = shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; echo forbidden"})
	if !r.IsError || !strings.Contains(r.Text, `rule \bforbidden\b`) {
		t.Fatalf("custom rule did not refuse: %s", r.Text)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace.Root(), "marker")); err == nil {
		t.Error("a refused command ran")
	}
	// The configured list replaces the default one.
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "echo mkfs"}); r.IsError {
		t.Errorf("default rules applied despite a configured list: %s", r.Text)
	}
	s.Config.ShellBlocklist = []string{`(unclosed`}
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "echo hi"}); !r.IsError || !strings.Contains(r.Text, "not a valid regular expression") {
		t.Errorf("invalid rule: %s", r.Text)
	}
}

func BenchmarkShellBlocklist(b *testing.B) {
	rules, err := compileBlocklist(DefaultShellBlocklist)
	if err != nil {
		b.Fatal(err)
	}
	cmd := "cd sub && go test ./... 2>/dev/null | tee out.log > /dev/null; rm -rf ./build"
	for b.Loop() {
		if blockedBy(rules, cmd) != "" {
			b.Fatal("blocked")
		}
	}
}
