package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/trioagent/trio/policy"
)

// WriteFileName is the name of the write_file tool.
const WriteFileName = "write_file"

// WriteFileParams are the arguments of write_file.
type WriteFileParams struct {
	Path    string `json:"path" jsonschema:"description=File to write (relative to the workspace root). Parent folders are created."`
	Content string `json:"content" jsonschema:"description=The whole new content of the file."`

	rel string
}

// Effects says write_file writes one path.
func (p *WriteFileParams) Effects() []Effect { return []Effect{{Kind: EffectWrite, Path: p.rel}} }

// WriteFile returns the write_file tool working in ws.
func WriteFile(ws *Workspace) Tool {
	return newTyped(WriteFileName, description(WriteFileName), func(p *WriteFileParams) error {
		rel, err := ws.Rel("path", p.Path)
		if err == nil && rel == "." {
			err = argErr("path", "names the workspace root, not a file")
		}
		p.rel = rel
		return err
	}, ws.writeFile)
}

func (ws *Workspace) writeFile(ctx context.Context, p WriteFileParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if res, over := ws.overFileLimit(WriteFileName, p.rel, len(p.Content)); over {
		return res, nil
	}
	created, err := ws.writeAtomic(p.rel, []byte(p.Content))
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	verb := "replaced"
	if created {
		verb = "created"
	}
	return Result{OK: true, Output: fmt.Sprintf("%s %s (%d bytes)", verb, p.rel, len(p.Content))}, nil
}

// writeAtomic writes data to rel through the root: parent folders are
// created, the data goes to a temporary file in the same folder, which is
// then renamed over rel, so a reader never sees half a file. An existing
// file keeps its permission bits. created reports whether rel was new.
func (ws *Workspace) writeAtomic(rel string, data []byte) (created bool, err error) {
	dir, base := path.Dir(rel), path.Base(rel)
	if dir != "." {
		if err := ws.Root.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
	}
	// Work inside the folder by name from here on: a symlink swapped in
	// above it cannot redirect the write.
	d, err := ws.openDirChecked(dir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	mode := fs.FileMode(0o644)
	switch st, err := d.Lstat(base); {
	case err == nil && st.IsDir():
		return false, &fs.PathError{Op: "write", Path: rel, Err: syscall.EISDIR}
	case err == nil && st.Mode().IsRegular():
		mode = st.Mode().Perm()
	case err == nil: // a symlink swapped in: the rename replaces it, never writes through it
	case errors.Is(err, fs.ErrNotExist):
		created = true
	default:
		return false, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + base + tmpMark + hex.EncodeToString(rnd[:]) + tmpSuffix
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = d.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return false, err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return false, err
	}
	if err = f.Close(); err != nil {
		return false, err
	}
	if err = d.Chmod(tmp, mode); err != nil { // umask may have narrowed it
		return false, err
	}
	if err = d.Rename(tmp, base); err != nil {
		return false, err
	}
	return created, nil
}

// maxFile is the largest file the file tools write.
func (ws *Workspace) maxFile() int64 {
	if ws.MaxFile > 0 {
		return ws.MaxFile
	}
	return policy.DefaultFile
}

// overFileLimit is the tool error for a file of n bytes past the limit.
func (ws *Workspace) overFileLimit(tool, rel string, n int) (Result, bool) {
	if limit := ws.maxFile(); int64(n) > limit {
		return errorResult("%s %s: the content is %s, more than the policy's file size limit (limits.file) of %s; nothing was written: split it into smaller files", tool, rel, sizeText(int64(n)), sizeText(limit)), true
	}
	return Result{}, false
}

// sizeText is n bytes for the model: "5.0 MiB (5242880 bytes)".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A write's temporary file is "." + name + tmpMark + 12 hex digits +
// tmpSuffix, beside the file it replaces.
const (
	tmpMark   = ".trio-"
	tmpSuffix = ".tmp"
)

// isWriteTemp reports whether name is a write's temporary file.
func isWriteTemp(name string) bool {
	rest, ok := strings.CutSuffix(name, tmpSuffix)
	i := strings.LastIndex(rest, tmpMark)
	if !ok || !strings.HasPrefix(name, ".") || i < 1 || len(rest)-i-len(tmpMark) != 12 {
		return false
	}
	_, err := hex.DecodeString(rest[i+len(tmpMark):])
	return err == nil
}

// RemoveInterruptedWrites removes, under root, the temporary files of
// writes that never finished (trio was killed between creating one and
// renaming it into place), and returns their paths relative to root. They
// are trio's own, never the project's: left there, the Critic would count
// them as stray files. Symlinks are not followed.
func RemoveInterruptedWrites(root string) ([]string, error) {
	var removed []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder holds none of ours
		}
		if d.Type().IsRegular() && isWriteTemp(d.Name()) {
			if err := os.Remove(p); err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			removed = append(removed, filepath.ToSlash(rel))
		}
		return nil
	})
	return removed, err
}
