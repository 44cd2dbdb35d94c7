package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// guardBlocked are destructive commands in the spellings an agent (or a
// prompt injection) might use; each must be refused by the named rule.
var guardBlocked = []struct{ cmd, rule string }{
	// rm -rf / itself, in flag and path spellings.
	{"rm -rf /", ruleRmRoot},
	{"rm -fr /", ruleRmRoot},
	{"rm -rf /*", ruleRmRoot},
	{"rm -rf --no-preserve-root /", ruleRmRoot},
	{"rm -r -f /", ruleRmRoot},
	{"rm -rf -- /", ruleRmRoot},
	{"rm -rf /.", ruleRmRoot},
	{"rm -rf //", ruleRmRoot},
	{"rm -rf /../..", ruleRmRoot},
	{"rm -rf ./build /", ruleRmRoot},
	{"echo hi\nrm -rf /\n", ruleRmRoot},
	// Quoting and escaping.
	{`rm -rf "/"`, ruleRmRoot},
	{`rm -rf '/'`, ruleRmRoot},
	{`\rm -rf /`, ruleRmRoot},
	{`'rm' -rf /`, ruleRmRoot},
	{`"rm" -rf /`, ruleRmRoot},
	{`r\m -rf /`, ruleRmRoot},
	{`r''m -rf /`, ruleRmRoot},
	{`$'\x72\x6d' -rf /`, ruleRmRoot},
	{`{rm,-rf,/}`, ruleRmRoot},
	// Paths and wrappers.
	{"/bin/rm -rf /", ruleRmRoot},
	{"/usr/bin/rm -rf /", ruleRmRoot},
	{"/b?n/r? -rf /", ruleRmRoot},
	{"command rm -rf /", ruleRmRoot},
	{"exec rm -rf /", ruleRmRoot},
	{"env rm -rf /", ruleRmRoot},
	{"env -i PATH=/bin rm -rf /", ruleRmRoot},
	{"env -S 'rm -rf /'", ruleRmRoot},
	{"sudo rm -rf /", ruleRmRoot},
	{"sudo -u root -- rm -rf /", ruleRmRoot},
	{"nice -n 10 rm -rf /", ruleRmRoot},
	{"nohup rm -rf / &", ruleRmRoot},
	{"timeout 10 rm -rf /", ruleRmRoot},
	{"time rm -rf /", ruleRmRoot},
	{"busybox rm -rf /", ruleRmRoot},
	{"xargs rm -rf <<< /", ruleRmRoot},
	{"echo / | xargs rm -rf", ruleRmRoot},
	// Nested shells, eval and substitutions.
	{"sh -c 'rm -rf /'", ruleRmRoot},
	{`bash -c "rm -rf /"`, ruleRmRoot},
	{"bash -lc 'rm -rf /'", ruleRmRoot},
	{"sudo sh -c 'rm -rf /*'", ruleRmRoot},
	{`bash -c "bash -c 'rm -rf /'"`, ruleRmRoot},
	{"su -c 'rm -rf /'", ruleRmRoot},
	{"eval 'rm -rf /'", ruleRmRoot},
	{"eval rm -rf /", ruleRmRoot},
	{"trap 'rm -rf /' EXIT", ruleRmRoot},
	{"watch -n 1 rm -rf /", ruleRmRoot},
	{"x=$(rm -rf /)", ruleRmRoot},
	{"echo $(rm -rf /)", ruleRmRoot},
	{"echo `rm -rf /`", ruleRmRoot},
	{"$(echo rm) -rf /", ruleRmRoot},
	{"`printf rm` -rf /", ruleRmRoot},
	// Pipelines, here-strings and here-documents into a shell.
	{`echo "rm -rf /" | sh`, ruleRmRoot},
	{"echo 'rm -rf /' | bash", ruleRmRoot},
	{`printf 'rm -rf /\n' | bash -s`, ruleRmRoot},
	{"echo cm0gLXJmIC8= | base64 -d | sh", ruleRmRoot},
	{"bash <<< 'rm -rf /'", ruleRmRoot},
	{"sh <<EOF\nrm -rf /\nEOF", ruleRmRoot},
	{"cat <<'EOF' | bash\nrm -rf /\nEOF", ruleRmRoot},
	{"source <(echo rm -rf /)", ruleRmRoot},
	{"bash <(echo 'rm -rf /')", ruleRmRoot},
	// Variables and arrays set earlier in the command.
	{"x=/; rm -rf $x", ruleRmRoot},
	{`D=/ && rm -rf "$D"`, ruleRmRoot},
	{`export D=/; rm -rf "${D}"`, ruleRmRoot},
	{`a=(rm -rf /); "${a[@]}"`, ruleRmRoot},
	{`p=r; q=m; $p$q -rf /`, ruleRmRoot},
	// Home, system directories, relative paths after cd /.
	{"rm -rf ~", ruleRmRoot},
	{"rm -rf ~/", ruleRmRoot},
	{"rm -rf $HOME", ruleRmRoot},
	{"rm -rf /usr", ruleRmRoot},
	{"rm -rf /etc/", ruleRmRoot},
	{"rm -rf /home/*", ruleRmRoot},
	{"cd / && rm -rf *", ruleRmRoot},
	{"cd /; rm -rf ./*", ruleRmRoot},
	{"mv / /tmp/x", ruleRmRoot},
	{"find / -delete", ruleRmRoot},
	{"find / -exec rm -rf {} +", ruleRmRoot},
	{"chmod -R 000 /", ruleChmodRoot},
	{"chown -R nobody /", ruleChmodRoot},
	{"sudo chmod -R 777 /etc", ruleChmodRoot},
	// File systems and devices.
	{"mkfs /dev/sda1", ruleMkfs},
	{"mkfs.ext4 /dev/sda1", ruleMkfs},
	{"sudo /sbin/mkfs.vfat -F 32 /dev/sdb1", ruleMkfs},
	{"`mkfs.ext4 /dev/sdb`", ruleMkfs},
	{"wipefs -a /dev/sda", ruleMkfs},
	{"mkswap /dev/sda2", ruleMkfs},
	{"echo x > /dev/sda", ruleWriteToDevice},
	{"cat img >> /dev/sdb1", ruleWriteToDevice},
	{"echo x >/dev/nvme0n1", ruleWriteToDevice},
	{"echo x >| /dev/sda", ruleWriteToDevice},
	{`echo x > "/dev/sda"`, ruleWriteToDevice},
	{"echo x > /dev/nul", ruleWriteToDevice},
	{"echo x > /dev/nullx", ruleWriteToDevice},
	{"echo x &> /dev/mem", ruleWriteToDevice},
	{"echo x > /dev//sda", ruleWriteToDevice},
	{"d=/dev/sda; echo x > $d", ruleWriteToDevice},
	{"exec 3>/dev/sda", ruleWriteToDevice},
	{"dd if=/dev/zero of=/dev/sda", ruleWriteToDevice},
	{"dd if=img of=/dev/mmcblk0 bs=4M", ruleWriteToDevice},
	{"cat img | sudo tee /dev/sda", ruleWriteToDevice},
	{"cp disk.img /dev/sdb", ruleWriteToDevice},
	{"shred /dev/sda", ruleWriteToDevice},
	// Commands the parser refuses (invalid UTF-8) are split plainly.
	{"echo '\xff'; rm -rf /", ruleRmRoot},
	{"echo \xff > /dev/sda", ruleWriteToDevice},
	{"sh -c 'rm -rf / \xff'", ruleRmRoot},
	// Fork bombs.
	{":(){ :|:& };:", ruleForkBomb},
	{"bomb() { bomb | bomb & }; bomb", ruleForkBomb},
	{"f(){ f & f; }; f", ruleForkBomb},
	{"bash -c ':(){ :|:& };:'", ruleForkBomb},
}

// guardAllowed are ordinary commands that mention the same programs,
// paths or strings; none may be refused.
var guardAllowed = []string{
	"rm -rf ./build", "rm -rf build/", "rm -rf /tmp/troupe-x", "rm -r ./a ./b", "rm -rf node_modules dist",
	`rm -rf "$BUILD_DIR/"`, `rm -rf "$tmp"`, "rm -f /tmp/*.log", `rm -rf "$HOME/.cache/troupe"`, "rm -rf ~/.cache/x",
	"grep rm file.txt", `grep -r "rm -rf /" .`, `echo "rm -rf /"`, "echo 'rm -rf /' > notes.txt", `printf 'rm -rf /\n'`,
	`git commit -m "rm -rf / is bad"`, "man rm", "which rm", "command -v rm", "type rm",
	"ls /", "cd / && ls", "rm -rf ./build; cd /", "rm x && ls /", "find / -name foo", "find . -delete",
	"find . -name '*.o' -exec rm {} +", "find /tmp -name x -delete", "mv build /tmp/old-build",
	"echo x > /dev/null", "make 2>/dev/null", "make &>/dev/null", "cmd >/dev/null 2>&1", "echo err > /dev/stderr",
	"echo out >/dev/stdout", "echo hi > /dev/tty", "exec 3>&1", "echo >&2 hi", "dd if=/dev/zero of=out.img bs=1k count=1",
	"dd if=/dev/sda of=disk.img", "cat < /dev/urandom | head -c 4", "cp /dev/null empty.txt", "tee out.log < in.txt",
	"mkfs.ext4 disk.img", "mkfs.ext4 -F ./disk.img", "echo mkfs_helper", "grep -r mkfs .", "mkfs.ext4 --help",
	"chmod -R u+w ./build", "chmod 755 /tmp/x", "chown -R me ./dir", "chmod -R a+r $HOME/project",
	"sh -c 'echo hi'", `bash -c "go test ./..."`, "echo hello | sh", "curl -s https://example.com/install.sh | sh",
	"go test ./... 2>&1 | tail", `eval "$(ssh-agent -s)"`, "f() { echo hi; }; f", `retry() { "$@" || retry "$@"; }`,
	"x=/; echo $x", "xargs rm < files.txt", "git ls-files -z | xargs -0 rm -f", "echo {1..100000000}",
	"cd /tmp && rm -rf ./*", "cd && ls", "source .venv/bin/activate", ". ./env.sh",
	"printf '%s\\n' a b | xargs -I{} echo {}", "sudo apt-get install -y ripgrep",
	"echo '\xff rm -rf /'", "echo \xff 2>/dev/null", "cat '\xff' > out.txt",
}

func TestShellGuardVariants(t *testing.T) {
	t.Parallel()
	g := &shellGuard{home: "/home/agent"}
	caught := 0
	for _, c := range guardBlocked {
		r := g.check(c.cmd)
		switch {
		case r == nil:
			t.Errorf("%q: not refused, want rule %s", c.cmd, c.rule)
		case r.Rule != c.rule:
			t.Errorf("%q: refused by %s (%s), want %s", c.cmd, r.Rule, r.Why, c.rule)
		default:
			caught++
		}
	}
	passed := 0
	for _, cmd := range guardAllowed {
		if r := g.check(cmd); r != nil {
			t.Errorf("%q wrongly refused by %s: %s (in %q)", cmd, r.Rule, r.Why, r.Command)
		} else {
			passed++
		}
	}
	t.Logf("refused %d of %d destructive variants; allowed %d of %d ordinary commands", caught, len(guardBlocked), passed, len(guardAllowed))
}

// Configured regular expressions add to the built-in rules and also see
// the normalised commands, so quoting does not get past them.
func TestShellGuardUserRules(t *testing.T) {
	t.Parallel()
	user, err := compileBlocklist([]string{`(?P<no_curl>\bcurl\b)`, `^git push`})
	if err != nil {
		t.Fatal(err)
	}
	g := &shellGuard{user: user, home: "/home/agent"}
	for cmd, want := range map[string]string{
		"curl https://x":              "no_curl",
		"cu''rl https://x":            "no_curl",
		"sh -c 'c\\url https://x'":    "no_curl",
		"sudo git push origin main":   "^git push",
		"env X=1 git push":            "^git push",
		"rm -rf /":                    ruleRmRoot,
		"echo ok; `git push --force`": "^git push",
	} {
		r := g.check(cmd)
		if r == nil || r.Rule != want {
			t.Errorf("%q: refusal %+v, want rule %s", cmd, r, want)
		}
	}
	for _, cmd := range []string{"git pull", "echo curling", "grep -r push ."} {
		if r := g.check(cmd); r != nil {
			t.Errorf("%q wrongly refused: %+v", cmd, r)
		}
	}
}

// Deeply nested scripts are refused rather than checked partway.
func TestShellGuardDepth(t *testing.T) {
	t.Parallel()
	cmd := "echo hi"
	for range guardMaxDepth + 2 {
		cmd = "eval " + shellQuote(cmd)
	}
	g := &shellGuard{}
	if r := g.check(cmd); r == nil || r.Rule != ruleTooNested {
		t.Fatalf("deep nesting: %+v", r)
	}
	if r := g.check("eval " + shellQuote("eval "+shellQuote("echo hi"))); r != nil {
		t.Fatalf("two levels refused: %+v", r)
	}
}

// A refused command is an error result naming the rule and the command,
// and nothing runs.
func TestShellBlocklistRefusesWithoutRunning(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	// Harmless if the blocklist failed: no such program.
	r := shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; mkfs.troupe-none /dev/null"})
	if !r.IsError || r.Metadata["blocked_by"] != ruleMkfs {
		t.Fatalf("not refused: %s", r.Text)
	}
	golden(t, "shell/blocked", r.Text)

	s.Config.ShellBlocklist = []string{`\bforbidden\b`}
	r = shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; echo 'forbid''den'"})
	if !r.IsError || !strings.Contains(r.Text, `rule \bforbidden\b`) {
		t.Fatalf("custom rule did not refuse: %s", r.Text)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace.Root(), "marker")); err == nil {
		t.Error("a refused command ran")
	}
	// Configured rules add to the built-in ones.
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "touch marker; sh -c 'mkfs.troupe-none /dev/sdz'"}); r.Metadata["blocked_by"] != ruleMkfs {
		t.Errorf("built-in rules dropped by a configured list: %s", r.Text)
	}
	s.Config.ShellBlocklist = []string{`(unclosed`}
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "echo hi"}); !r.IsError || !strings.Contains(r.Text, "not a valid regular expression") {
		t.Errorf("invalid rule: %s", r.Text)
	}
}

// shellQuote quotes s as one shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func BenchmarkShellGuard(b *testing.B) {
	g := &shellGuard{home: "/home/agent"}
	cmd := "cd sub && go test ./... 2>/dev/null | tee out.log > /dev/null; rm -rf ./build"
	for b.Loop() {
		if g.check(cmd) != nil {
			b.Fatal("blocked")
		}
	}
}
