package agent

import (
	"crypto/sha256"
	"encoding/hex"
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
