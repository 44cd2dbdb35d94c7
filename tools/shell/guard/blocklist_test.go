package guard

import (
	"strings"
	"testing"
)

// guardBlocked are destructive commands in the spellings an agent (or a
// prompt injection) might use; each must be refused by the named rule.
var guardBlocked = []struct{ cmd, rule string }{
	// rm -rf / itself, in flag and path spellings.
	{"rm -rf /", RuleRmRoot},
	{"rm -fr /", RuleRmRoot},
	{"rm -rf /*", RuleRmRoot},
	{"rm -rf --no-preserve-root /", RuleRmRoot},
	{"rm -r -f /", RuleRmRoot},
	{"rm -rf -- /", RuleRmRoot},
	{"rm -rf /.", RuleRmRoot},
	{"rm -rf //", RuleRmRoot},
	{"rm -rf /../..", RuleRmRoot},
	{"rm -rf ./build /", RuleRmRoot},
	{"echo hi\nrm -rf /\n", RuleRmRoot},
	// Quoting and escaping.
	{`rm -rf "/"`, RuleRmRoot},
	{`rm -rf '/'`, RuleRmRoot},
	{`\rm -rf /`, RuleRmRoot},
	{`'rm' -rf /`, RuleRmRoot},
	{`"rm" -rf /`, RuleRmRoot},
	{`r\m -rf /`, RuleRmRoot},
	{`r''m -rf /`, RuleRmRoot},
	{`$'\x72\x6d' -rf /`, RuleRmRoot},
	{`{rm,-rf,/}`, RuleRmRoot},
	// Paths and wrappers.
	{"/bin/rm -rf /", RuleRmRoot},
	{"/usr/bin/rm -rf /", RuleRmRoot},
	{"/b?n/r? -rf /", RuleRmRoot},
	{"command rm -rf /", RuleRmRoot},
	{"exec rm -rf /", RuleRmRoot},
	{"env rm -rf /", RuleRmRoot},
	{"env -i PATH=/bin rm -rf /", RuleRmRoot},
	{"env -S 'rm -rf /'", RuleRmRoot},
	{"sudo rm -rf /", RuleRmRoot},
	{"sudo -u root -- rm -rf /", RuleRmRoot},
	{"nice -n 10 rm -rf /", RuleRmRoot},
	{"nohup rm -rf / &", RuleRmRoot},
	{"timeout 10 rm -rf /", RuleRmRoot},
	{"time rm -rf /", RuleRmRoot},
	{"busybox rm -rf /", RuleRmRoot},
	{"xargs rm -rf <<< /", RuleRmRoot},
	{"echo / | xargs rm -rf", RuleRmRoot},
	// Nested shells, eval and substitutions.
	{"sh -c 'rm -rf /'", RuleRmRoot},
	{`bash -c "rm -rf /"`, RuleRmRoot},
	{"bash -lc 'rm -rf /'", RuleRmRoot},
	{"sudo sh -c 'rm -rf /*'", RuleRmRoot},
	{`bash -c "bash -c 'rm -rf /'"`, RuleRmRoot},
	{"su -c 'rm -rf /'", RuleRmRoot},
	{"eval 'rm -rf /'", RuleRmRoot},
	{"eval rm -rf /", RuleRmRoot},
	{"trap 'rm -rf /' EXIT", RuleRmRoot},
	{"watch -n 1 rm -rf /", RuleRmRoot},
	{"x=$(rm -rf /)", RuleRmRoot},
	{"echo $(rm -rf /)", RuleRmRoot},
	{"echo `rm -rf /`", RuleRmRoot},
	{"$(echo rm) -rf /", RuleRmRoot},
	{"`printf rm` -rf /", RuleRmRoot},
	// Pipelines, here-strings and here-documents into a shell.
	{`echo "rm -rf /" | sh`, RuleRmRoot},
	{"echo 'rm -rf /' | bash", RuleRmRoot},
	{`printf 'rm -rf /\n' | bash -s`, RuleRmRoot},
	{"echo cm0gLXJmIC8= | base64 -d | sh", RuleRmRoot},
	{"bash <<< 'rm -rf /'", RuleRmRoot},
	{"sh <<EOF\nrm -rf /\nEOF", RuleRmRoot},
	{"cat <<'EOF' | bash\nrm -rf /\nEOF", RuleRmRoot},
	{"source <(echo rm -rf /)", RuleRmRoot},
	{"bash <(echo 'rm -rf /')", RuleRmRoot},
	// Variables and arrays set earlier in the command.
	{"x=/; rm -rf $x", RuleRmRoot},
	{`D=/ && rm -rf "$D"`, RuleRmRoot},
	{`export D=/; rm -rf "${D}"`, RuleRmRoot},
	{`a=(rm -rf /); "${a[@]}"`, RuleRmRoot},
	{`p=r; q=m; $p$q -rf /`, RuleRmRoot},
	// Home, system directories, relative paths after cd /.
	{"rm -rf ~", RuleRmRoot},
	{"rm -rf ~/", RuleRmRoot},
	{"rm -rf $HOME", RuleRmRoot},
	{"rm -rf /usr", RuleRmRoot},
	{"rm -rf /etc/", RuleRmRoot},
	{"rm -rf /home/*", RuleRmRoot},
	{"cd / && rm -rf *", RuleRmRoot},
	{"cd /; rm -rf ./*", RuleRmRoot},
	{"mv / /tmp/x", RuleRmRoot},
	{"find / -delete", RuleRmRoot},
	{"find / -exec rm -rf {} +", RuleRmRoot},
	{"chmod -R 000 /", RuleChmodRoot},
	{"chown -R nobody /", RuleChmodRoot},
	{"sudo chmod -R 777 /etc", RuleChmodRoot},
	// File systems and devices.
	{"mkfs /dev/sda1", RuleMkfs},
	{"mkfs.ext4 /dev/sda1", RuleMkfs},
	{"sudo /sbin/mkfs.vfat -F 32 /dev/sdb1", RuleMkfs},
	{"`mkfs.ext4 /dev/sdb`", RuleMkfs},
	{"wipefs -a /dev/sda", RuleMkfs},
	{"mkswap /dev/sda2", RuleMkfs},
	{"echo x > /dev/sda", RuleWriteToDevice},
	{"cat img >> /dev/sdb1", RuleWriteToDevice},
	{"echo x >/dev/nvme0n1", RuleWriteToDevice},
	{"echo x >| /dev/sda", RuleWriteToDevice},
	{`echo x > "/dev/sda"`, RuleWriteToDevice},
	{"echo x > /dev/nul", RuleWriteToDevice},
	{"echo x > /dev/nullx", RuleWriteToDevice},
	{"echo x &> /dev/mem", RuleWriteToDevice},
	{"echo x > /dev//sda", RuleWriteToDevice},
	{"d=/dev/sda; echo x > $d", RuleWriteToDevice},
	{"exec 3>/dev/sda", RuleWriteToDevice},
	{"dd if=/dev/zero of=/dev/sda", RuleWriteToDevice},
	{"dd if=img of=/dev/mmcblk0 bs=4M", RuleWriteToDevice},
	{"cat img | sudo tee /dev/sda", RuleWriteToDevice},
	{"cp disk.img /dev/sdb", RuleWriteToDevice},
	{"shred /dev/sda", RuleWriteToDevice},
	// Commands the parser refuses (invalid UTF-8) are split plainly.
	{"echo '\xff'; rm -rf /", RuleRmRoot},
	{"echo \xff > /dev/sda", RuleWriteToDevice},
	{"sh -c 'rm -rf / \xff'", RuleRmRoot},
	// Fork bombs.
	{":(){ :|:& };:", RuleForkBomb},
	{"bomb() { bomb | bomb & }; bomb", RuleForkBomb},
	{"f(){ f & f; }; f", RuleForkBomb},
	{"bash -c ':(){ :|:& };:'", RuleForkBomb},
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
	g := &Guard{home: "/home/agent"}
	caught := 0
	for _, c := range guardBlocked {
		r := g.Check(c.cmd)
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
		if r := g.Check(cmd); r != nil {
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
	g := &Guard{user: user, home: "/home/agent"}
	for cmd, want := range map[string]string{
		"curl https://x":              "no_curl",
		"cu''rl https://x":            "no_curl",
		"sh -c 'c\\url https://x'":    "no_curl",
		"sudo git push origin main":   "^git push",
		"env X=1 git push":            "^git push",
		"rm -rf /":                    RuleRmRoot,
		"echo ok; `git push --force`": "^git push",
	} {
		r := g.Check(cmd)
		if r == nil || r.Rule != want {
			t.Errorf("%q: refusal %+v, want rule %s", cmd, r, want)
		}
	}
	for _, cmd := range []string{"git pull", "echo curling", "grep -r push ."} {
		if r := g.Check(cmd); r != nil {
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
	g := &Guard{}
	if r := g.Check(cmd); r == nil || r.Rule != RuleTooNested {
		t.Fatalf("deep nesting: %+v", r)
	}
	if r := g.Check("eval " + shellQuote("eval "+shellQuote("echo hi"))); r != nil {
		t.Fatalf("two levels refused: %+v", r)
	}
}

// shellQuote quotes s as one shell word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func BenchmarkShellGuard(b *testing.B) {
	g := &Guard{home: "/home/agent"}
	cmd := "cd sub && go test ./... 2>/dev/null | tee out.log > /dev/null; rm -rf ./build"
	for b.Loop() {
		if g.Check(cmd) != nil {
			b.Fatal("blocked")
		}
	}
}
