package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"syscall"

	"github.com/trioagent/trio/policy"
)

// DeleteFileName is the name of the delete_file tool.
const DeleteFileName = "delete_file"

// DeleteFileParams are the arguments of delete_file.
type DeleteFileParams struct {
	Path      string `json:"path" jsonschema_description:"File or folder to delete (relative to the workspace root). A symlink is deleted itself, never what it points to."`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"description=Delete a folder with everything in it. Without it only a file or an empty folder is deleted."`

	rel string
}

// Effects says delete_file writes one path. With recursive the gate's
// write check is also asked, when the tool runs, about every entry under it.
func (p *DeleteFileParams) Effects() []Effect { return []Effect{{Kind: EffectWrite, Path: p.rel}} }

// DeleteFile returns the delete_file tool working in ws.
func DeleteFile(ws *Workspace) Tool {
	return newTyped(DeleteFileName, description(DeleteFileName), func(p *DeleteFileParams) error {
		clean, err := ws.cleanRel("path", p.Path)
		if err != nil {
			return err
		}
		if clean == "." {
			return argErr("path", "names the workspace root, which cannot be deleted; name a file or folder inside it")
		}
		// The entry named is what goes, never what a symlink there points
		// to: only the folders above it are resolved, so that a file under
		// a link to a read-only folder is judged as in that folder.
		dir, base := path.Dir(clean), path.Base(clean)
		if real, ok := ws.resolve(dir); ok {
			dir = real
		}
		p.rel = path.Join(dir, base)
		return nil
	}, ws.deleteFile)
}

func (ws *Workspace) deleteFile(ctx context.Context, p DeleteFileParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	dir, base := path.Dir(p.rel), path.Base(p.rel)
	// Work inside the folder by name: a symlink swapped in above the entry
	// since the gate judged it cannot send the deletion elsewhere.
	d, err := ws.openDirChecked(dir)
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	defer d.Close()
	st, err := d.Lstat(base)
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	if !st.IsDir() {
		if err := d.Remove(base); err != nil {
			return fsResult(p.rel, err), nil
		}
		what := "file"
		if st.Mode()&fs.ModeSymlink != 0 {
			what = "symlink"
		}
		return Result{OK: true, Output: fmt.Sprintf("deleted %s %s", what, p.rel)}, nil
	}
	if !p.Recursive {
		if err := d.Remove(base); err != nil {
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				return errorResult("%s: the folder is not empty; set recursive to true to delete it with everything in it", p.rel), nil
			}
			return fsResult(p.rel, err), nil
		}
		return Result{OK: true, Output: fmt.Sprintf("deleted empty folder %s", p.rel)}, nil
	}
	// The gate judged the folder; nothing under it that the policy protects
	// (a read-only or denied file) may go with it.
	g := callingGate(ctx)
	entries := 0
	var refused *policy.Decision
	var refusedPath string
	err = fs.WalkDir(d.FS(), base, func(sub string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		entries++
		if g != nil {
			rel := path.Join(dir, sub)
			if dec := g.writeCheck(rel); dec.Verdict != policy.Allow {
				refused, refusedPath = &dec, rel
				return fs.SkipAll
			}
		}
		return ctx.Err()
	})
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	if refused != nil {
		res := deniedResult(*refused)
		res.Output = fmt.Sprintf("%s: nothing was deleted: %s is protected; %s", p.rel, refusedPath, res.Output)
		return res, nil
	}
	if err := d.RemoveAll(base); err != nil {
		return fsResult(p.rel, err), nil
	}
	return Result{OK: true, Output: fmt.Sprintf("deleted folder %s (%d entries)", p.rel, entries)}, nil
}
