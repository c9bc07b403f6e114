package critic

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// cacheDirs are folders tools leave behind; they are stray as a whole.
var cacheDirs = map[string]bool{
	"__pycache__": true, ".pytest_cache": true, ".mypy_cache": true, ".ruff_cache": true,
	".tox": true, ".nox": true, ".hypothesis": true, ".cache": true, ".venv": true, "venv": true,
	".idea": true, ".vscode": true, "node_modules": true,
}

// tempFile matches base names of cache, temporary and crash files.
var tempFile = regexp.MustCompile(`^(.*\.(pyc|pyo|tmp|temp|swp|swo|orig|rej|test|prof)|.*~|\.DS_Store|Thumbs\.db|core|core\.\d+|nohup\.out)$`)

// metadata matches base names of files any project may hold or its tools
// write without a plan naming them.
var metadata = regexp.MustCompile(`^(go\.mod|go\.sum|go\.work|go\.work\.sum|package-lock\.json|yarn\.lock|pnpm-lock\.yaml|Cargo\.lock|poetry\.lock|uv\.lock|Pipfile\.lock|(README|LICENSE|LICENCE|COPYING|NOTICE|CHANGELOG)([._-].*)?|\.gitignore|\.gitattributes|\.editorconfig)$`)

// strayRules decides which workspace paths are stray.
type strayRules struct {
	planned  map[string]bool
	needed   map[string]bool // folders holding planned or baseline files
	testsDir string
	baseline map[string]bool
	allowed  []string
}

func newStrayRules(planned []string, testsDir string, baseline map[string]bool, allowed []string) *strayRules {
	r := &strayRules{
		planned:  make(map[string]bool),
		needed:   make(map[string]bool),
		testsDir: testsDir,
		baseline: baseline,
		allowed:  allowed,
	}
	addParents := func(p string) {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			r.needed[d] = true
		}
	}
	for _, p := range planned {
		r.planned[p] = true
		addParents(p)
	}
	for p := range baseline {
		addParents(p)
	}
	r.needed[testsDir] = true
	addParents(testsDir)
	return r
}

func (r *strayRules) isAllowed(p string) bool {
	if r.baseline[p] {
		return true
	}
	for _, g := range r.allowed {
		if globMatch(g, p) {
			return true
		}
	}
	return false
}

func (r *strayRules) inTests(p string) bool {
	return p == r.testsDir || strings.HasPrefix(p, r.testsDir+"/")
}

// findStray walks fsys and returns the stray paths, sorted; a stray folder
// is reported once, with a trailing slash.
func (r *strayRules) findStray(fsys fs.FS) ([]string, error) {
	var stray []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			if d != nil && d.IsDir() && !fs.ValidPath(p) {
				// A folder whose name fs.FS refuses (not UTF-8): it cannot
				// be looked into. One that held files before the run is
				// the person's; one the run made is stray as a whole.
				if !r.needed[p] && !r.isAllowed(p) {
					stray = append(stray, p+"/")
				}
				return nil
			}
			return err
		}
		if p == "." {
			return nil
		}
		base := d.Name()
		if d.IsDir() {
			switch {
			case p == ".git":
				return fs.SkipDir
			case r.inTests(p) || r.isAllowed(p) || r.isAllowed(p+"/"):
				return fs.SkipDir
			case base == "vendor" && exists(fsys, path.Join(p, "modules.txt")):
				return fs.SkipDir
			case base == "node_modules" && (exists(fsys, path.Join(path.Dir(p), "package.json"))):
				return fs.SkipDir
			case cacheDirs[base] && !r.needed[p]:
				stray = append(stray, p+"/")
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case r.planned[p] || r.inTests(p) || r.isAllowed(p):
		case tempFile.MatchString(base):
			stray = append(stray, p)
		case metadata.MatchString(base):
		default:
			stray = append(stray, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("critic: walk workspace: %w", err)
	}
	slices.Sort(stray)
	return stray, nil
}

func exists(fsys fs.FS, p string) bool {
	_, err := fs.Stat(fsys, p)
	return err == nil
}

// globMatch reports whether the slash-separated relative path name matches
// pattern (doublestar's grammar: "**" as a whole segment matches any number
// of segments); a pattern without a slash matches the base name at any
// depth, and a trailing slash is ignored. A malformed pattern matches
// nothing.
func globMatch(pattern, name string) bool {
	pattern = strings.TrimSuffix(strings.TrimPrefix(pattern, "./"), "/")
	if pattern == "" {
		return false
	}
	name = strings.TrimSuffix(name, "/")
	if !strings.Contains(pattern, "/") && pattern != "**" {
		name = path.Base(name)
	}
	ok, _ := doublestar.Match(pattern, name)
	return ok
}

// ListFiles returns the workspace-relative paths of the regular files in
// fsys (a workspace's Root.FS()), sorted, skipping .git. Take it before a
// run and pass it to WithBaseline, so files that were already there are
// never stray (keep it in the checkpoint: a resumed run must reuse it).
func ListFiles(fsys fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == ".git":
			return fs.SkipDir
		case d.Type().IsRegular():
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("critic: list files: %w", err)
	}
	return out, nil
}
