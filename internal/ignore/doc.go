// Package ignore decides which paths of a workspace are ignored by the
// rules ripgrep applies by default.
//
// The rules come from .gitignore files (in every directory, each applying
// to the paths below it), .ignore files (same syntax, higher precedence)
// and .git/info/exclude of a repository root. The syntax is git's:
// blank lines and lines starting with # are skipped, a leading ! re-includes
// what an earlier rule excluded, a trailing / limits a rule to directories,
// a slash at the start or in the middle anchors a rule to the directory of
// its file (otherwise the rule matches a base name at any depth), * and ?
// and [...] never cross a /, and ** matches any number of directories.
//
// Precedence follows ripgrep: within one kind of file the deepest file that
// has a matching rule decides, and within a file the last matching rule
// decides; a decision from some .ignore file beats one from a .gitignore,
// which beats one from .git/info/exclude. Rules of directories above a
// nested repository (a directory holding .git) do not apply inside it,
// except those of .ignore files. Unlike ripgrep, .gitignore files apply even
// when the workspace is not a git repository: an unpacked archive with a
// .gitignore is meant to be read the same way. Rule files above the root are
// never read (ripgrep reads those up to the repository root): the matcher,
// like every tool, stays inside the workspace.
//
// A .git directory, and everything under it, is always ignored. Hidden
// files are not this package's business: callers decide whether to show
// them. Rule files are read lazily, once per directory, and cached (a
// walker that has listed a directory can say which exist with Prime, and
// match a directory's entries without locks through Dir); a
// Matcher is safe for concurrent use. Rule files that change after they
// were read are not re-read: make a new Matcher per search.
package ignore
