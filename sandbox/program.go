package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Program is what a started process (a stdio MCP server) needs of the
// host beyond what every command sees, as ResolveProgram found it when
// the process starts.
type Program struct {
	// Argv is the command line to run: the original one, or with the
	// program's absolute host path in place of a bare name that only
	// the host's PATH finds.
	Argv []string
	// Dirs are host folders the sandbox makes visible read-only, at
	// their host paths, never writable: the folder the program was
	// found in, the folder it resolves to through symlinks, and for an
	// interpreter the folder of its script.
	Dirs []string
	// PathDirs go in front of the process's PATH, so that a program
	// whose first line is "#!/usr/bin/env node" finds the node beside it.
	PathDirs []string
}

// ResolveProgram finds what argv's program needs made visible in a
// sandbox whose commands see the folders visible (the toolchain) and
// the workspace, and PATH path. A program path finds there needs nothing.
// Otherwise the host's PATH (this process's) finds a bare name, and the
// program's folders, symlinks resolved, and the folder of the first
// operand that names an existing file by an absolute path outside the
// workspace (node /opt/server/index.js) are to be made visible.
//
// A folder that would show more than the program is refused with an
// error: the root, the home folder or one holding it, a folder holding
// the workspace, the host's temporary folder or one holding it, and a
// folder holding any of private (the sandbox's own state).
func ResolveProgram(argv []string, path, workspace string, visible, private []string) (Program, error) {
	p := Program{Argv: argv}
	if len(argv) == 0 || argv[0] == "" {
		return p, ErrEmptyCommand
	}
	ws := resolved(workspace)
	under := func(dir string, roots []string) bool {
		for _, r := range roots {
			if within(resolved(r), dir) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	add := func(what, dir string) error {
		if seen[dir] || within(ws, dir) || under(dir, visible) {
			return nil
		}
		refuse := func(why string) error {
			return fmt.Errorf("the %s's folder %s is %s: a sandbox shows it to no process; install the program in a folder of its own", what, dir, why)
		}
		home, _ := os.UserHomeDir()
		switch {
		case dir == "/":
			return refuse("the root")
		case home != "" && within(dir, resolved(home)):
			return refuse("the home folder or holds it")
		case within(dir, ws):
			return refuse("a folder holding the workspace")
		case within(dir, resolved(os.TempDir())):
			return refuse("the temporary folder or holds it")
		}
		for _, d := range private {
			if d != "" && within(dir, resolved(d)) {
				return refuse("a folder holding the sandbox's own state")
			}
		}
		seen[dir] = true
		p.Dirs = append(p.Dirs, dir)
		return nil
	}
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		// Found where commands find it, or nowhere (the sandbox reports
		// it missing): as it is.
		prog = ""
		if _, err := lookPath(argv[0], visiblePath(path, visible)); err != nil {
			if found, err := lookPath(argv[0], os.Getenv("PATH")); err == nil && filepath.IsAbs(found) {
				prog = found
			}
		}
	}
	if prog != "" && prog != argv[0] {
		dir := resolved(filepath.Dir(prog))
		if err := add("program", dir); err != nil {
			return p, err
		}
		p.PathDirs = append(p.PathDirs, dir)
		p.Argv = append([]string{filepath.Join(dir, filepath.Base(prog))}, argv[1:]...)
		prog = p.Argv[0]
	}
	if filepath.IsAbs(prog) {
		// The folder it is named in (where a symlink to it lies), then
		// the one it resolves to.
		if err := add("program", resolved(filepath.Dir(prog))); err != nil {
			return p, err
		}
		if real, err := filepath.EvalSymlinks(prog); err == nil {
			dir := filepath.Dir(real)
			if err := add("program", dir); err != nil {
				return p, err
			}
			if !slices.Contains(p.PathDirs, dir) && !under(dir, visible) && !within(ws, dir) {
				p.PathDirs = append(p.PathDirs, dir)
			}
		}
	}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if filepath.IsAbs(a) {
			if real, err := filepath.EvalSymlinks(a); err == nil {
				if st, err := os.Stat(real); err == nil && st.Mode().IsRegular() {
					if err := add("script", filepath.Dir(real)); err != nil {
						return p, err
					}
				}
			}
		}
		break
	}
	return p, nil
}

// visiblePath is path less its folders outside visible.
func visiblePath(path string, visible []string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		for _, v := range visible {
			if within(resolved(v), resolved(d)) {
				keep = append(keep, d)
				break
			}
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// within reports whether p is root or inside it (both clean, absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}
