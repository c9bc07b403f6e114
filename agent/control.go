package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/tools"
)

// Trio's control plane: what it loads as configuration or runs on the
// host, and its run folder. Nothing the Worker's code can write may steer
// Trio, so the files that do are read-only (or, absent, denied) for the
// whole run when they lie in the workspace, and pinned by hash from one
// session to the next (PinControlFiles); the run folder is denied.

// Names under which the path rules added for the control plane appear in
// decisions.
const (
	controlRule = "Trio's control files"
	runDirRule  = "Trio's run folder"
)

// WithControlFiles names the files a run's owner loads as configuration
// or runs on the host (trio.yaml, the policy file, the programs of MCP
// servers started on the host). Each one inside the workspace is
// read-only for the file tools and in the sandbox for the whole run; one
// that does not exist is denied, so that neither a tool nor a command can
// create it (an isolating sandbox removes it after the command that made
// it). The scripts WithHooks' commands name are added by the run itself.
// Pin them across sessions with PinControlFiles before loading them.
func WithControlFiles(paths ...string) Option {
	return func(c *config) error {
		for _, p := range paths {
			if p == "" {
				return errors.New("agent: WithControlFiles: empty path")
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				return fmt.Errorf("agent: WithControlFiles: %w", err)
			}
			c.controlFiles = append(c.controlFiles, abs)
		}
		return nil
	}
}

// WithWorkspaceControlFiles names files, relative to the workspace, that
// a later command started in the workspace would load as configuration
// (the CLI's trio.yaml): a run whose workspace holds none yet leaves
// code there that may write one. Each is a control file of the run
// (WithControlFiles) and is pinned in the workspace when the session
// starts, so that the pins of a new workspace record it absent: a later
// session that finds it there stops (PinnedWorkspace, PinControlFiles).
// A pinned one that changed since fails the session with a
// *ControlChangedError; the owner pins first, with trust, when a person
// confirmed the change.
func WithWorkspaceControlFiles(names ...string) Option {
	return func(c *config) error {
		for _, n := range names {
			if n == "" || filepath.IsAbs(n) || !filepath.IsLocal(n) {
				return fmt.Errorf("agent: WithWorkspaceControlFiles: %q is not a path inside the workspace", n)
			}
			c.workspaceControl = append(c.workspaceControl, filepath.Clean(n))
		}
		return nil
	}
}

// protectControl adds the control plane's path rules to the run's policy
// before the sandbox lays them out: control files in the workspace
// read-only (denied while absent), and the runs folder, when it lies in
// the workspace, denied. It returns the run folder's workspace-relative
// path when it lies there ("" otherwise).
func (r *run) protectControl() (string, error) {
	ws := r.st.Workspace
	var ro, denied []string
	files := slices.Clone(r.cfg.controlFiles)
	if len(r.cfg.workspaceControl) > 0 {
		var own []string
		for _, n := range r.cfg.workspaceControl {
			own = append(own, filepath.Join(ws, n))
		}
		if _, err := PinControlFiles(ws, own, false); err != nil {
			return "", err
		}
		files = append(files, own...)
	}
	if r.cfg.hooks != nil {
		// Bound to the workspace: scripts named through $CLAUDE_PROJECT_DIR too.
		files = append(files, r.cfg.hooks.ForRun(r.st.RunID, ws, nil).Files()...)
	}
	for _, f := range files {
		rel, in := tools.RelInside(ws, f)
		if !in || rel == "." {
			continue
		}
		if _, err := os.Lstat(f); err == nil {
			ro = append(ro, policy.QuoteGlob(rel))
		} else {
			denied = append(denied, policy.QuoteGlob(rel))
		}
	}
	runDir := ""
	if rel, in := tools.RelInside(ws, filepath.Dir(r.dir)); in {
		if rel == "." {
			// The runs folder is the workspace: deny this run's folder.
			rel, _ = tools.RelInside(ws, r.dir)
		}
		runDir = rel
		r.cfg.policy = r.cfg.policy.WithDeniedAs(runDirRule, policy.QuoteGlob(rel)+"/**")
	}
	if len(ro) > 0 {
		r.cfg.policy = r.cfg.policy.WithReadOnlyAs(controlRule, ro...)
	}
	if len(denied) > 0 {
		r.cfg.policy = r.cfg.policy.WithDeniedAs(controlRule+" (absent: none may be created)", denied...)
	}
	return runDir, nil
}

// ErrControlChanged is wrapped (by a *ControlChangedError) when a control
// file pinned by an earlier session on the same workspace changed.
var ErrControlChanged = errors.New("a control file changed since the last session")

// ControlChangedError lists the pinned control files that changed.
type ControlChangedError struct {
	Workspace string
	// Changed says, per file, what changed ("/w/trio.yaml: was absent,
	// now present").
	Changed []string
}

func (e *ControlChangedError) Error() string {
	what := "a control file changed"
	if len(e.Changed) > 1 {
		what = fmt.Sprintf("%d control files changed", len(e.Changed))
	}
	return fmt.Sprintf("%s since the last session on the workspace %s: %s (Trio loads these as configuration or runs them on the host, and the Worker's code may have written them)",
		what, e.Workspace, strings.Join(e.Changed, "; "))
}

func (e *ControlChangedError) Unwrap() error { return ErrControlChanged }

// absent is a pin's value for a file that does not exist.
const absent = "absent"

// pinRecord is a workspace's pins, kept out of the workspace.
type pinRecord struct {
	Workspace string            `json:"workspace"`
	Files     map[string]string `json:"files"` // workspace-relative path: sha256 hex, or "absent"
	Updated   time.Time         `json:"updated"`
}

// PinsFile is where the pins of the workspace ws are kept:
// $XDG_STATE_HOME/trio/pins (else ~/.local/state/trio/pins), one file per
// workspace named by the SHA-256 of its absolute path with symlinks
// resolved. Never inside a workspace: the Worker's code cannot reach it.
func PinsFile(ws string) (string, error) {
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(pinsDir(), hex.EncodeToString(sum[:16])+".json"), nil
}

// pinsDir is $XDG_STATE_HOME/trio/pins, else ~/.local/state/trio/pins,
// else, for a user without a home folder (nobody's is /nonexistent), a
// folder of this uid's in the temporary folder, which PinControlFiles
// checks is private before it writes there.
func pinsDir() string {
	if base := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(base) {
		return filepath.Join(base, "trio", "pins")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		if st, err := os.Stat(home); err == nil && st.IsDir() {
			return filepath.Join(home, ".local", "state", "trio", "pins")
		}
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("trio-state-%d", os.Geteuid()), "pins")
}

// PinnedWorkspace returns the nearest folder holding path (its own folder
// or one above) that an earlier session pinned control files for: the
// workspace a file such as trio.yaml belongs to, whatever folder the next
// session builds in. ok is false when no such folder has pins.
func PinnedWorkspace(path string) (ws string, ok bool) {
	dir, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	for {
		dir = filepath.Dir(dir)
		if pins, err := PinsFile(dir); err == nil {
			if _, err := os.Stat(pins); err == nil {
				return dir, true
			}
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", false
		}
	}
}

// PinControlFiles pins, by SHA-256, the files among files that lie in the
// workspace ws (a file that does not exist is pinned as absent), in the
// pins file of ws (see PinsFile). Call it when a session starts, before
// anything it names is loaded or run. A file pinned by an earlier session
// whose content (or existence) differs now is an error wrapping
// ErrControlChanged that names it, unless trust (a person confirmed the
// change): then the new content is pinned. It returns the files pinned.
func PinControlFiles(ws string, files []string, trust bool) ([]string, error) {
	path, err := PinsFile(ws)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	rec := pinRecord{Files: map[string]string{}}
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if err := json.Unmarshal(b, &rec); err != nil || rec.Files == nil {
			return nil, fmt.Errorf("agent: pins of control files %s: damaged (%v); remove it to pin the files afresh", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("agent: pins of control files: %w", err)
	}
	rec.Workspace, _ = filepath.Abs(ws)
	// fresh are the files no session pinned yet: named in the error with
	// the changes, since a changed trio.yaml may name new scripts too.
	var pinned, changed, fresh []string
	for _, f := range files {
		rel, in := tools.RelInside(ws, f)
		if !in || rel == "." {
			continue
		}
		now := absent
		if sum, err := tools.FileSHA256(f); err == nil {
			now = sum
		} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			// ENOTDIR: a workspace that is a file, which the run refuses.
			return nil, fmt.Errorf("agent: control file: %w", err)
		}
		switch was, ok := rec.Files[rel]; {
		case !ok:
			fresh = append(fresh, f+": not pinned before")
		case was != now:
			changed = append(changed, f+": "+pinChange(was, now))
		}
		rec.Files[rel] = now
		pinned = append(pinned, f)
	}
	if len(changed) > 0 && !trust {
		return nil, &ControlChangedError{Workspace: rec.Workspace, Changed: append(changed, fresh...)}
	}
	if len(pinned) == 0 {
		return nil, nil
	}
	rec.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("agent: pins of control files: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("agent: pins of control files: %w (set XDG_STATE_HOME to a folder of yours outside the workspace)", err)
	}
	if err := sandbox.Private(filepath.Dir(path), true); err != nil {
		// Another user's folder could hold pins that hide a change.
		return nil, fmt.Errorf("agent: pins of control files: %w (set XDG_STATE_HOME to a folder of yours outside the workspace)", err)
	}
	if err := writeFileAtomic(path, b); err != nil {
		return nil, fmt.Errorf("agent: pins of control files: %w", err)
	}
	return pinned, nil
}

func pinChange(was, now string) string {
	switch {
	case was == absent:
		return "was absent, now present"
	case now == absent:
		return "was present, now absent"
	}
	return fmt.Sprintf("sha256 was %s…, now %s…", was[:12], now[:12])
}
