package tools

import (
	"embed"
	"strings"
)

//go:embed descriptions/*.md
var descriptions embed.FS

// description returns the embedded long description of a built-in tool.
func description(name string) string {
	b, err := descriptions.ReadFile("descriptions/" + name + ".md")
	if err != nil {
		panic("tools: missing description for " + name) // caught by every test
	}
	return strings.TrimSpace(string(b))
}

// Builtins returns the built-in tools working in ws: read_file, write_file,
// edit_file, delete_file, list_files, search_files, run_command,
// run_tests and run_linter.
func Builtins(ws *Workspace) []Tool {
	return []Tool{
		ReadFile(ws),
		WriteFile(ws),
		EditFile(ws),
		DeleteFile(ws),
		ListFiles(ws),
		SearchFiles(ws),
		RunCommand(ws),
		RunTests(ws),
		RunLinter(ws),
	}
}
