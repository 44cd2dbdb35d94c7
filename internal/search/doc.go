// Package search is the engine behind the grep and find_files tools: a
// concurrent directory walker with ripgrep's default filtering, and grep
// and find over it, in pure Go.
//
// The walk skips hidden entries (a name starting with "."), the .git
// directory, and whatever the ignore rules exclude (package ignore:
// .gitignore, .ignore, .git/info/exclude). It never follows symbolic links.
// The path it is given is searched even when hidden or ignored, as
// ripgrep searches a path named on its command line. Directories are
// read by a bounded set of goroutines sharing a stack of pending
// directories; each goroutine also searches the files of the directories
// it reads, with its own buffers, so nothing is allocated per line.
//
// Everything is opened beneath the root (Target.Dir, an os.Root): the
// target path through the root, which follows symbolic links inside it
// and refuses any that lead out; every directory below relative to its
// parent's descriptor and every file relative to its directory's, with
// O_NOFOLLOW, so a directory or file swapped for a symbolic link while
// the walk runs is skipped, never followed. Rule files are read through
// the root too. A directory's descriptor stays open until its reader and
// every subdirectory waiting to be opened from it are done.
//
// Grep reads files in 64 KB chunks and treats a file as binary from the
// chunk holding its first NUL byte: a file whose first chunk holds one is
// skipped; a later one ends the search of the file, and what was found
// before it stands in files and content mode but not in count mode, which
// is what ripgrep prints in each case. Patterns are RE2 (Go's
// regexp). Outside multiline mode a pattern can never match a line end
// (classes lose \n, a literal \n is an error), so it runs over whole
// chunks at once and every match lies within a line. Before the regular
// expression runs, a literal that every match must contain, extracted
// from the parsed pattern, is searched for with bytes.Index (or, for a
// case-insensitive ASCII literal, with IndexByte on its rarest byte in
// both cases); only the lines holding it are given to the regular
// expression, and a pattern that is just a literal needs no regular
// expression at all. Smart case: a pattern without upper-case letters
// matches regardless of case.
//
// Differences from ripgrep worth knowing: \b and \w are ASCII-only in Go's
// regexp (ripgrep's are Unicode-aware); .gitignore files apply even outside
// a git repository; there are no look-around assertions or
// backreferences, as in ripgrep without --pcre2.
//
// Results are sorted by modification time, newest first, ties by path;
// only matching files are stat'ed. A cancelled context stops a search
// promptly, returning the context's error.
package search
