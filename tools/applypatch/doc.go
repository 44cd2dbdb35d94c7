// Package applypatch holds the apply_patch tool: one patch in the Codex format
// adds, updates, moves and deletes files, all or nothing. It parses and
// matches with the leaf tools/patch and writes through the workspace and
// change gate of package tools, which knows nothing of it; tools/builtin
// registers it.
package applypatch
