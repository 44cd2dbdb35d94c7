// Package patch parses the apply_patch format (the one OpenAI's Codex
// models write: *** Begin Patch, Add/Delete/Update File sections, @@
// hunks) and locates and applies hunks to a file's lines, ever more
// loosely where a model's context lines drift from the file. It reads and
// writes no files: the apply_patch tool (package tools/applypatch) does, through the
// workspace.
package patch
