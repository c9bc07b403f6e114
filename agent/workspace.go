package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// skipDir reports folders that are not part of the project.
func skipDir(name string) bool {
	return name == ".git" || name == ".cache" || name == "node_modules" || name == "__pycache__"
}

// workspaceFiles lists the workspace's files, at most max, in path order,
// each shown as showPath does (a name that is not UTF-8 escaped).
func workspaceFiles(dir string, max int) ([]string, error) {
	var out []string
	err := walkWorkspace(dir, "", func(_, rel string, _ fs.DirEntry, folder bool) error {
		if folder {
			return nil
		}
		out = append(out, showPath(rel))
		if len(out) >= max {
			return filepath.SkipAll
		}
		return nil
	})
	return out, err
}

// workspaceHash fingerprints the workspace's files and contents; a file
// larger than the snapshot's limit counts by its size and time (it is not
// read), so the cost of a round does not grow with one file's size.
func workspaceHash(dir string) string {
	h := sha256.New()
	var buf []byte
	_ = walkWorkspace(dir, "", func(p, rel string, d fs.DirEntry, folder bool) error {
		h.Write([]byte(rel))
		h.Write([]byte{0})
		data, st, err := readBounded(p, snapshotMaxFile, buf)
		switch {
		case err == nil:
			buf = data
			h.Write(data)
		case st.Mode != 0:
			fmt.Fprintf(h, "%d %d %v", st.Size, st.MTime, st.Mode)
		default:
			if fi, err := d.Info(); err == nil {
				fmt.Fprintf(h, "%d %d %v", fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
			}
		}
		h.Write([]byte{0})
		return nil
	})
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
