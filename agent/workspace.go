package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// skipDir reports folders that are not part of the project.
func skipDir(name string) bool {
	return name == ".git" || name == ".cache" || name == "node_modules" || name == "__pycache__"
}

// workspaceFiles lists the workspace's files (slash paths), at most max.
func workspaceFiles(dir string, max int) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		if len(out) >= max {
			return filepath.SkipAll
		}
		return nil
	})
	return out, err
}

// workspaceHash fingerprints the workspace's files and contents.
func workspaceHash(dir string) string {
	h := sha256.New()
	files, _ := workspaceFiles(dir, 100000)
	for _, f := range files {
		h.Write([]byte(f))
		h.Write([]byte{0})
		if fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
			io.Copy(h, fh)
			fh.Close()
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// WithReuseWorkspace lets Run build in a workspace that holds files another
// run left there (its lock file next to the workspace names that run).
// Without it such a run is refused (ErrWorkspaceUsed): a second run would
// otherwise silently build on, and be judged with, the first one's files.
// A workspace with files nobody's run left (a seed, an existing project)
// needs no option.
func WithReuseWorkspace() Option {
	return func(c *config) error {
		c.reuseWorkspace = true
		return nil
	}
}

// checkReuse refuses a non-empty workspace whose lock file names another
// run, unless reuse is allowed. A lock held right now is left to
// lockWorkspace, which names the holder.
func checkReuse(ws, runID string, reuse bool) error {
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil // missing: a fresh workspace
	}
	lock := workspaceLockName(real)
	b, err := os.ReadFile(lock)
	if err != nil || reuse || isLockBusy(lock) {
		return nil
	}
	var h holder
	if json.Unmarshal(b, &h) != nil || h.RunID == "" || h.RunID == runID {
		return nil
	}
	files, _ := workspaceFiles(ws, 1)
	if len(files) == 0 {
		return nil
	}
	return invalidInput(fmt.Errorf("agent: workspace %s holds files left by run %s: %w; choose an empty or new workspace, remove the files, or reuse them on purpose (WithReuseWorkspace)", ws, h.RunID, ErrWorkspaceUsed))
}
