package bus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rolesDoc is the section of docs/wire.md on the subjects of each role,
// as RolePermissions has them for the default prefix.
func rolesDoc(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("## Subjects per role\n\n")
	b.WriteString("The server enforces these (`bus.RolePermissions`, prefix `troupe`); anything else is a\n")
	b.WriteString("permissions violation. A requester's replies go to the asker's `_INBOX`; a node may\n")
	b.WriteString("answer a request it received (once, within 2 minutes).\n")
	for _, role := range Roles {
		perm, err := RolePermissions(role, DefaultPrefix)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n### " + string(role) + "\n\n")
		row := func(what string, subjects []string) {
			if len(subjects) == 0 {
				return
			}
			b.WriteString("- " + what + ": `" + strings.Join(subjects, "`, `") + "`\n")
		}
		row("publish", perm.Pub.Allow)
		row("never publish", perm.Pub.Deny)
		row("subscribe", perm.Sub.Allow)
	}
	return b.String()
}

// docs/wire.md lists the subjects of each role as the code grants them.
func TestWireDocListsRolePermissions(t *testing.T) {
	path := filepath.Join("..", "docs", "wire.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := rolesDoc(t)
	if os.Getenv("TROUPE_UPDATE_DOCS") == "1" {
		s := string(doc)
		if i := strings.Index(s, "## Subjects per role\n"); i >= 0 {
			end := strings.Index(s[i+1:], "\n## ")
			rest := ""
			if end >= 0 {
				rest = s[i+1+end+1:]
			}
			s = s[:i] + want + "\n" + rest
		} else {
			s = strings.TrimRight(s, "\n") + "\n\n" + want
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/wire.md does not list the subjects of each role as bus.RolePermissions grants them; run TROUPE_UPDATE_DOCS=1 go test ./bus -run TestWireDocListsRolePermissions\nwant:\n%s", want)
	}
}
