package tools

import (
	"context"
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
	// MaxFile bounds, in bytes, a file that write_file or edit_file writes
	// (the policy's limits.file); zero means policy.DefaultFile.
	MaxFile int64
	// Visible, when set, hides paths from list_files and search_files (a
	// directory it rejects is not entered). A Gate always hides what its
	// policy denies reading; set Visible (PolicyVisible) to hide the same
	// when tools run without a gate.
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

// visible applies Workspace.Visible and the filter of the gate that runs
// the call.
func (ws *Workspace) visible(ctx context.Context, rel string) bool {
	if g := callingGate(ctx); g != nil && g.hidden(rel) {
		return false
	}
	return ws.Visible == nil || ws.Visible(rel)
}

// Rel turns a path from the model into a cleaned, slash-separated,
// workspace-relative path ("." for the root). An absolute path is accepted
// only inside the workspace (as the host or the sandbox sees it); a path
// that climbs out with ".." is refused. The error names field. This is the
// path the policy judges; Root still refuses symlinks that lead out.
func (ws *Workspace) Rel(field, p string) (string, error) {
	clean, err := ws.cleanRel(field, p)
	if err != nil {
		return "", err
	}
	if real, ok := ws.resolve(clean); ok {
		clean = real
	}
	return clean, nil
}

// cleanRel is Rel without following symlinks.
func (ws *Workspace) cleanRel(field, p string) (string, error) {
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
	if strings.ContainsRune(p, 0) {
		return "", argErr(field, "contains a NUL byte")
	}
	clean := path.Clean(filepath.ToSlash(p))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", argErr(field, "%q leads outside the workspace; use a path relative to the workspace root", p)
	}
	return clean, nil
}

// errChanged says a path the gate checked now leads elsewhere.
var errChanged = errors.New("changed since the policy checked it (a symlink appeared in it)")

// checked makes sure rel, which had no symlinks when the gate judged it,
// still has none, so the call reaches the file that was judged.
func (ws *Workspace) checked(op, rel string) error {
	// A link that leads out (!ok) is Root's to refuse.
	if real, ok := ws.resolve(rel); ok && real != rel {
		return &fs.PathError{Op: op, Path: rel, Err: errChanged}
	}
	return nil
}

// openChecked opens rel for reading and makes sure it is still the file
// the gate judged: no symlink was swapped in on the way, before or while
// it was opened.
func (ws *Workspace) openChecked(rel string) (*os.File, error) {
	f, err := ws.Root.Open(rel)
	if err != nil {
		return nil, err
	}
	if err := ws.sameAsChecked(rel, f.Stat); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openDirChecked opens the folder dir as a root of its own, so that what
// is then done inside it by name cannot be sent elsewhere by a symlink
// swapped in above it.
func (ws *Workspace) openDirChecked(dir string) (*os.Root, error) {
	d, err := ws.Root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if err := ws.sameAsChecked(dir, func() (fs.FileInfo, error) { return d.Stat(".") }); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (ws *Workspace) sameAsChecked(rel string, opened func() (fs.FileInfo, error)) error {
	if err := ws.checked("open", rel); err != nil {
		return err
	}
	fi, err := opened()
	if err != nil {
		return err
	}
	li, err := ws.Root.Lstat(rel)
	if err != nil || !os.SameFile(fi, li) {
		return &fs.PathError{Op: "open", Path: rel, Err: errChanged}
	}
	return nil
}

// maxLinks bounds how many symlinks resolve follows (as the kernel does).
const maxLinks = 40

// resolve follows the symlinks in a cleaned relative path that stay inside
// the workspace, so that the policy judges the file a call would reach
// (a link to .env is .env; a file under a link to vendor is under vendor).
// ok is false when a link leads out or cannot be read: the path is then
// kept as given, and Root refuses it when the tool runs. A missing part
// ends the walk: the rest is created as named.
func (ws *Workspace) resolve(rel string) (string, bool) {
	t, ok := ws.follow(rel)
	if !ok || path.IsAbs(t) {
		return "", false
	}
	return t, true
}

// follow walks a cleaned relative path part by part, following symlinks as
// the kernel does. It returns where the path leads: workspace-relative
// while it stays inside, an absolute host path once a link leads out (the
// walk stops there: what lies outside is not the workspace's to read). ok
// is false when a link cannot be read or there are too many of them. A
// missing part ends the walk: the rest is kept as named.
func (ws *Workspace) follow(rel string) (string, bool) {
	if rel == "." {
		return rel, true
	}
	done, todo := ".", strings.Split(rel, "/")
	for links := 0; len(todo) > 0; {
		next := path.Join(done, todo[0])
		todo = todo[1:]
		st, err := ws.Root.Lstat(next)
		if err != nil {
			// No such entry: nothing further can be a link. A word that
			// is not a path at all (a long commit message, main.go/x) ends
			// here too.
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENAMETOOLONG) || errors.Is(err, syscall.ENOTDIR) {
				return path.Join(append([]string{next}, todo...)...), true
			}
			return "", false
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", false
		}
		target, err := ws.Root.Readlink(next)
		if err != nil {
			return "", false
		}
		if path.IsAbs(target) {
			r, ok := ws.fromAbs(target)
			if !ok {
				return path.Join(append([]string{target}, todo...)...), true
			}
			target, done = r, "."
		}
		joined := path.Join(done, target)
		if joined == ".." || strings.HasPrefix(joined, "../") {
			out := path.Join(filepath.ToSlash(ws.Dir), joined)
			return path.Join(append([]string{out}, todo...)...), true
		}
		todo = append(strings.Split(joined, "/"), todo...)
		done = "."
	}
	return done, true
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
	case errors.Is(err, errChanged):
		return errorResult("%s: refused: the path %v; call again", rel, errChanged)
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
