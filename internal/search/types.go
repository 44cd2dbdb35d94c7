package search

import (
	"slices"
	"strings"
	"sync"
)

// fileTypes maps ripgrep's type names to the base-name globs ripgrep gives
// them (`rg --type-list` of ripgrep 13), under the
// names the tools document. Built on first use: most searches name no type.
var fileTypes = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		"c":      {"*.[chH]", "*.[chH].in", "*.cats"},
		"cpp":    {"*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in", "*.cc", "*.cc.in", "*.hh", "*.hh.in", "*.inl"},
		"cs":     {"*.cs"},
		"css":    {"*.css", "*.scss"},
		"go":     {"*.go"},
		"html":   {"*.ejs", "*.htm", "*.html"},
		"java":   {"*.java", "*.jsp", "*.jspx", "*.properties"},
		"js":     {"*.js", "*.jsx", "*.vue"},
		"json":   {"*.json", "composer.lock"},
		"kotlin": {"*.kt", "*.kts"},
		"md":     {"*.markdown", "*.md", "*.mdown", "*.mkdn"},
		"php":    {"*.php", "*.php3", "*.php4", "*.php5", "*.phtml"},
		"proto":  {"*.proto"},
		"asm":    {"*.S", "*.asm", "*.s"},
		"py":     {"*.py"},
		"rb":     {"*.gemspec", "*.rb", "*.rbw", ".irbrc", "Gemfile", "Rakefile", "config.ru"},
		"rust":   {"*.rs"},
		"scala":  {"*.sbt", "*.scala"},
		"sh": {"*.bash", "*.bashrc", "*.csh", "*.cshrc", "*.ksh", "*.kshrc", "*.sh", "*.tcsh", "*.zsh",
			".bash_login", ".bash_logout", ".bash_profile", ".bashrc", ".cshrc", ".kshrc", ".login", ".logout",
			".profile", ".tcshrc", ".zlogin", ".zlogout", ".zprofile", ".zshenv", ".zshrc",
			"bash_login", "bash_logout", "bash_profile", "bashrc", "profile", "zlogin", "zlogout", "zprofile", "zshenv", "zshrc"},
		"sql":   {"*.psql", "*.sql"},
		"swift": {"*.swift"},
		"toml":  {"*.toml", "Cargo.lock"},
		"ts":    {"*.ts", "*.tsx"},
		"yaml":  {"*.yaml", "*.yml"},
	}
})

// typeAliases name the same globs under a second name.
var typeAliases = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"kt": "kotlin", "python": "py", "ruby": "rb", "csharp": "cs", "protobuf": "proto", "markdown": "md",
	}
})

// TypeNames lists the known file type names, sorted.
func TypeNames() []string {
	names := make([]string, 0, len(fileTypes()))
	for n := range fileTypes() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// typeGlobs returns the globs of a type name (case-insensitive), or nil.
func typeGlobs(name string) []string {
	name = strings.ToLower(strings.TrimSpace(name))
	if target, ok := typeAliases()[name]; ok {
		name = target
	}
	return fileTypes()[name]
}
