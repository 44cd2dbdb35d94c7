package bus

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
)

// The users the docs describe: each role's, a node of its own identity
// and the shared node.creds of earlier troupes. Keys and names are
// placeholders.
var docGrants = []struct {
	file  string
	grant Grant
}{
	{"requester.creds", Grant{Role: RoleRequester, User: "<user>"}},
	{"nodes/<name>.creds", Grant{Role: RoleNode, User: "<user>", Node: "<name>"}},
	{"node.creds (shared, earlier troupes)", Grant{Role: RoleNode, User: "<user>"}},
	{"watcher.creds", Grant{Role: RoleWatcher, User: "<user>"}},
}

// docPerms are the permissions of docGrants for prefix, with the prefix
// written as <prefix> (<PREFIX> in stream names).
func docPerms(t *testing.T, prefix string) []struct {
	file string
	pub  []string
	deny []string
	sub  []string
	resp string
} {
	t.Helper()
	generic := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, strings.ToUpper(prefix)+"_", "<PREFIX>_"), prefix, "<prefix>")
	}
	all := func(l []string) []string {
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = generic(s)
		}
		return out
	}
	var out []struct {
		file           string
		pub, deny, sub []string
		resp           string
	}
	for _, d := range docGrants {
		g := d.grant
		g.Prefix = prefix
		perm, err := g.Permissions()
		if err != nil {
			t.Fatal(err)
		}
		resp := ""
		if perm.Resp != nil {
			resp = perm.Resp.Expires.String()
		}
		out = append(out, struct {
			file           string
			pub, deny, sub []string
			resp           string
		}{d.file, all(perm.Pub.Allow), all(perm.Pub.Deny), all(perm.Sub.Allow), resp})
	}
	return out
}

// wireRolesDoc is the section of docs/wire.md on the subjects of each
// user, as Grant.Permissions has them.
func wireRolesDoc(t *testing.T, prefix string) string {
	var b strings.Builder
	b.WriteString("## Subjects per role\n\n")
	b.WriteString("The server enforces these (`bus.Grant.Permissions`; `<prefix>` is `nats.prefix`, upper-cased in\n")
	b.WriteString("stream names, `<user>` the user's public key, `<name>` a node's name); anything else is a\n")
	b.WriteString("permissions violation. Each user subscribes to its own inbox `_INBOX_<user>` only, and\n")
	b.WriteString("answers a request it received once, within its response window (allow_responses).\n")
	for _, p := range docPerms(t, prefix) {
		b.WriteString("\n### " + p.file + "\n\n")
		row := func(what string, subjects []string) {
			if len(subjects) > 0 {
				b.WriteString("- " + what + ": `" + strings.Join(subjects, "`, `") + "`\n")
			}
		}
		row("publish", p.pub)
		row("never publish", p.deny)
		row("subscribe", p.sub)
		if p.resp != "" {
			b.WriteString("- reply to a request received: once, within " + p.resp + "\n")
		}
	}
	return b.String()
}

// readmeRolesTable is the README's table of what each user may do with
// each stream and subject, derived from the same permissions.
func readmeRolesTable(t *testing.T, prefix string) string {
	var b strings.Builder
	b.WriteString("<!-- generated from bus.Grant.Permissions by TestDocsListRolePermissions -->\n")
	b.WriteString("| credentials | publishes | subscribes to | streams and buckets |\n|---|---|---|---|\n")
	names := NamesFor("<prefix>")
	s := streamsOf(names)
	s.events, s.tasks, s.results = "<PREFIX>_EVENTS", "<PREFIX>_TASKS", "<PREFIX>_RESULTS"
	for _, p := range docPerms(t, prefix) {
		var pub, sub []string
		for _, x := range p.pub {
			if !strings.HasPrefix(x, "$") {
				pub = append(pub, "`"+x+"`")
			}
		}
		for _, x := range p.sub {
			if !strings.HasPrefix(x, "$") {
				sub = append(sub, "`"+x+"`")
			}
		}
		var uses []string
		for _, st := range s.all() {
			if u := streamUse(p.pub, st); u != "" {
				uses = append(uses, "`"+st+"`: "+u)
			}
		}
		b.WriteString("| `" + p.file + "` | " + strings.Join(pub, " ") + " | " + strings.Join(sub, " ") + " | " + strings.Join(uses, "; ") + " |\n")
	}
	return b.String()
}

// streamUse says in words what the publish permissions pub allow on the
// stream st (as JetStream names it).
func streamUse(pub []string, st string) string {
	has := func(subject string) bool { return allowed(jwt.Permission{Allow: pub}, subject) }
	var u []string
	for _, op := range []struct{ word, subject string }{
		{"create", "$JS.API.STREAM.CREATE." + st},
		{"update", "$JS.API.STREAM.UPDATE." + st},
		{"purge", "$JS.API.STREAM.PURGE." + st},
		{"delete messages", "$JS.API.STREAM.MSG.DELETE." + st},
	} {
		if has(op.subject) {
			u = append(u, op.word)
		}
	}
	if has("$JS.API.STREAM.MSG.GET."+st) || has("$JS.API.DIRECT.GET."+st+".x") {
		u = append(u, "read")
	}
	if strings.HasSuffix(st, "_TASKS") {
		if has("$JS.API.CONSUMER.MSG.NEXT." + st + ".x") {
			u = append(u, "pull tasks")
		}
	} else if has("$JS.API.CONSUMER.CREATE." + st + ".x") {
		u = append(u, "follow")
	}
	switch {
	case strings.HasPrefix(st, "KV_"):
		bucket := strings.TrimPrefix(st, "KV_")
		if has("$KV." + bucket + ".any") {
			u = append(u, "write any key")
		} else if has("$KV." + bucket + ".<name>") {
			u = append(u, "write its own key")
		}
	case strings.HasPrefix(st, "OBJ_"):
		if has("$O." + strings.TrimPrefix(st, "OBJ_") + ".M.x") {
			u = append(u, "write")
		}
	}
	if len(u) == 0 && has("$JS.API.STREAM.INFO."+st) {
		u = append(u, "see it exists")
	}
	return strings.Join(u, ", ")
}

// replaceSection puts want in doc between the line starting with begin
// and the next line starting with end (exclusive), or appends it.
func replaceSection(doc, begin, end, want string) string {
	i := strings.Index(doc, begin)
	if i < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + want
	}
	j := strings.Index(doc[i+len(begin):], end)
	rest := ""
	if j >= 0 {
		rest = strings.TrimLeft(doc[i+len(begin)+j+1:], "\n")
	}
	return doc[:i] + want + "\n" + rest
}

// docs/wire.md lists the subjects of each user, and the README's table
// what each may do, as the code grants them; rendered for two prefixes,
// they are the same (no grant names another prefix's streams).
func TestDocsListRolePermissions(t *testing.T) {
	wire, readme := wireRolesDoc(t, DefaultPrefix), readmeRolesTable(t, DefaultPrefix)
	if other := wireRolesDoc(t, "alpha"); other != wire {
		t.Fatalf("the subjects differ between prefixes troupe and alpha (a grant names a fixed stream or subject):\ntroupe:\n%s\nalpha:\n%s", wire, other)
	}
	if other := readmeRolesTable(t, "alpha"); other != readme {
		t.Fatalf("the README table differs between prefixes troupe and alpha:\n%s\n%s", readme, other)
	}
	for _, d := range []struct{ path, begin, end, want string }{
		{filepath.Join("..", "docs", "wire.md"), "## Subjects per role\n", "\n## ", wire},
		{filepath.Join("..", "README.md"), "<!-- generated from bus.Grant.Permissions", "\n\n", readme},
	} {
		doc, err := os.ReadFile(d.path)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("TROUPE_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(d.path, []byte(replaceSection(string(doc), d.begin, d.end, d.want)), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !strings.Contains(string(doc), d.want) {
			t.Errorf("%s does not list what each role may do as bus.Grant.Permissions grants it; run TROUPE_UPDATE_DOCS=1 go test ./bus -run TestDocsListRolePermissions\nwant:\n%s", d.path, d.want)
		}
	}
}

// The stream uses the README shows are what the server lets each role do
// (a check of streamUse on the subjects it reads).
func TestStreamUseWords(t *testing.T) {
	perm, err := Grant{Role: RoleNode, Prefix: "alpha", User: "U1", Node: "<name>"}.Permissions()
	if err != nil {
		t.Fatal(err)
	}
	if got := streamUse(perm.Pub.Allow, "KV_alpha_nodes"); !strings.Contains(got, "write its own key") || strings.Contains(got, "any key") {
		t.Errorf("node's registry: %q", got)
	}
	if got := streamUse(perm.Pub.Allow, "ALPHA_TASKS"); strings.Contains(got, "create") || strings.Contains(got, "purge") {
		t.Errorf("node's queue: %q", got)
	}
	if !slices.Contains(perm.Pub.Allow, "$KV.alpha_nodes.<name>") {
		t.Errorf("node's key: %v", perm.Pub.Allow)
	}
}
