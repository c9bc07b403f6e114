package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// Workspace is the folder a run works in. Every built-in file tool goes
// through Root; every command goes through Sandbox.
type Workspace struct {
	// Dir is the absolute host path of the workspace.
	Dir string
	// Root confines file access to Dir: "..", absolute paths and symlinks
	// that lead out are refused by the kernel-backed API.
	Root *os.Root
	// Sandbox runs commands; nil means commands cannot run.
	Sandbox sandbox.Sandbox
	// Limits bound commands; a tool's timeout never exceeds Limits.Timeout.
	Limits sandbox.Limits
	// Visible, when set, hides paths from list_files and search_files (a
	// directory it rejects is not entered). Use PolicyVisible so that files
	// the policy denies reading do not leak through a search of ".".
	Visible func(rel string) bool
}

// OpenWorkspace opens dir (which must exist) as a workspace.
func OpenWorkspace(dir string, sb sandbox.Sandbox, limits sandbox.Limits) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real // the form sandboxes and test runners print
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return &Workspace{Dir: abs, Root: root, Sandbox: sb, Limits: limits}, nil
}

// Close releases the workspace's root. It does not close the sandbox, which
// its creator owns.
func (ws *Workspace) Close() error {
	if ws == nil || ws.Root == nil {
		return nil
	}
	return ws.Root.Close()
}

// PolicyVisible returns a Workspace.Visible filter that hides what p denies
// reading.
func PolicyVisible(p *policy.Policy) func(rel string) bool {
	return func(rel string) bool { return p.CheckPath(rel, policy.Read).Verdict != policy.Deny }
}

func (ws *Workspace) visible(rel string) bool {
	return ws.Visible == nil || ws.Visible(rel)
}

// Rel turns a path from the model into a cleaned, slash-separated,
// workspace-relative path ("." for the root). An absolute path is accepted
// only inside the workspace (as the host or the sandbox sees it); a path
// that climbs out with ".." is refused. The error names field. This is the
// path the policy judges; Root still refuses symlinks that lead out.
func (ws *Workspace) Rel(field, p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		rel, ok := ws.fromAbs(p)
		if !ok {
			return "", argErr(field, "%q is outside the workspace; use a path relative to the workspace root", p)
		}
		p = rel
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", argErr(field, "%q leads outside the workspace; use a path relative to the workspace root", p)
	}
	return clean, nil
}

func (ws *Workspace) fromAbs(p string) (string, bool) {
	bases := []string{ws.Dir}
	if ws.Sandbox != nil {
		if d := ws.Sandbox.Info().WorkspaceDir; d != "" && d != ws.Dir {
			bases = append(bases, d)
		}
	}
	for _, b := range bases {
		rel, err := filepath.Rel(b, filepath.Clean(p))
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// fsResult turns a file-system error on rel into a result the model can act
// on.
func fsResult(rel string, err error) Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errorResult("%s: no such file or directory", rel)
	case strings.Contains(err.Error(), "path escapes from parent"):
		return errorResult("%s: refused: the path leads outside the workspace (through a symlink or ..); use a path inside the workspace", rel)
	case errors.Is(err, fs.ErrPermission):
		return errorResult("%s: permission denied", rel)
	case errors.Is(err, syscall.EISDIR):
		return errorResult("%s: is a directory; use list_files", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return errorResult("%s: a parent of this path is a file, not a directory", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return errorResult("%s: %s: %v", rel, pe.Op, pe.Err)
	}
	return errorResult("%s: %v", rel, err)
}
