package workspace

import (
	"context"
	"strings"
)

// SnapshotBase is the base commit of the snapshot commit this
// repository made (its parent: Snapshot.Base), "" when it has none or
// is not one of this repository's commits. A remote agent's changeset
// names only its snapshot commit; its land needs the base too (a
// filtered file's clean form is the base's, checkFiltered).
func (r *Repo) SnapshotBase(ctx context.Context, commit string) string {
	out, code, err := r.g.runCode(ctx, nil, "rev-list", "--parents", "-n", "1", commit+"^{commit}")
	if err != nil || code != 0 {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return ""
	}
	return f[1]
}
