package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// ListFilesName is the name of the list_files tool.
const ListFilesName = "list_files"

// MaxListEntries caps how many paths list_files returns.
const MaxListEntries = 500

// ListFilesParams are the arguments of list_files.
type ListFilesParams struct {
	Pattern string `json:"pattern,omitempty" jsonschema:"description=Glob to filter files: ** matches any folders and a pattern without / matches file names at any depth (e.g. *.go or src/**/*_test.py). Default: every file."`
	Path    string `json:"path,omitempty" jsonschema:"description=Folder to list (relative to the workspace root). Default: the root."`

	rel string
}

// Effects says list_files reads one folder.
func (p *ListFilesParams) Effects() []Effect { return []Effect{{Kind: EffectRead, Path: p.rel}} }

// ListFiles returns the list_files tool working in ws.
func ListFiles(ws *Workspace) Tool {
	return newTyped(ListFilesName, description(ListFilesName), func(p *ListFilesParams) error {
		if err := validGlob(p.Pattern); err != nil {
			return argErr("pattern", "malformed glob %q: %v", p.Pattern, err)
		}
		var err error
		p.rel, err = ws.Rel("path", p.Path)
		return err
	}, ws.listFiles)
}

var errCapped = errors.New("capped")

func (ws *Workspace) listFiles(ctx context.Context, p ListFilesParams) (Result, error) {
	var (
		files  []string
		capped bool
		links  = ws.hardLinks()
	)
	err := ws.walk(ctx, p.rel, func(rel string, d fs.DirEntry) error {
		if !globMatch(p.Pattern, relTo(p.rel, rel)) {
			return nil
		}
		// A second name of a denied file is left out as the file is.
		if hide, err := links.hides(ctx, rel, d); err != nil || hide {
			return err
		}
		if len(files) == MaxListEntries {
			capped = true
			return errCapped
		}
		files = append(files, rel)
		return nil
	})
	switch {
	case errors.Is(err, errCapped):
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case err != nil:
		return fsResult(p.rel, err), nil
	}
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f)
		b.WriteByte('\n')
	}
	switch {
	case capped:
		fmt.Fprintf(&b, "[listing capped at %d entries; narrow it with path or pattern]\n", MaxListEntries)
	case len(files) == 0 && p.Pattern != "":
		fmt.Fprintf(&b, "no files under %s match %q\n", p.rel, p.Pattern)
	case len(files) == 0:
		fmt.Fprintf(&b, "no files under %s\n", p.rel)
	}
	return Result{OK: true, Output: b.String(), Truncated: capped}, nil
}

// relTo makes rel relative to base, so patterns apply below the listed folder.
func relTo(base, rel string) string {
	if base == "." {
		return rel
	}
	return strings.TrimPrefix(rel, base+"/")
}

// walk calls fn for every file (not folder) under dir in lexical order,
// through the root, skipping .git folders and what ws.Visible or the
// calling gate's policy hides.
// Symlinks are reported, never followed.
func (ws *Workspace) walk(ctx context.Context, dir string, fn func(rel string, d fs.DirEntry) error) error {
	if err := ws.checked("list", dir); err != nil {
		return err
	}
	st, err := ws.Root.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &fs.PathError{Op: "list", Path: dir, Err: errors.New("not a directory")}
	}
	return fs.WalkDir(ws.Root.FS(), dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == dir {
				return err
			}
			return nil // an unreadable entry is skipped, not fatal
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if rel != dir && (d.Name() == ".git" || !ws.visible(ctx, rel)) {
				return fs.SkipDir
			}
			return nil
		}
		if !ws.visible(ctx, rel) {
			return nil
		}
		return fn(path.Clean(rel), d)
	})
}
