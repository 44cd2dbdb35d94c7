package tools

// Names of the tools of this package: the one place each is spelled. The
// other tool packages spell their own (tools/shell, tools/web,
// tools/agent).
const (
	NameApplyPatch  = "apply_patch"
	NameEditFile    = "edit_file"
	NameFindFiles   = "find_files"
	NameGrep        = "grep"
	NameListDir     = "list_dir"
	NameReadFile    = "read_file"
	NameSearchTools = "search_tools"
	NameThink       = "think"
	NameTodo        = "todo"
	NameWriteFile   = "write_file"
)
