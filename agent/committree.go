package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/trioagent/trio/policy"
)

// TreeEntry is one entry of a folder as the start snapshot walks it (see
// StartDir), with its content: what a durable run commits to a store.
type TreeEntry struct {
	// Path is slash-separated, byte for byte (it may not be UTF-8).
	Path string
	Mode fs.FileMode
	// Data is a regular file's content, valid only while the callback runs.
	Data []byte
	// Link is a symbolic link's target (the link is not followed).
	Link string
	// SHA256 is the content's hash (a link's: its target's), as the start
	// snapshot's manifest names it.
	SHA256 string
	// Denied says the policy denies reading the path: it was not opened.
	Denied bool
	// Folder is a folder that is not the project's (node_modules, .cache,
	// __pycache__): listed, not walked.
	Folder bool
}

// ErrTreeFileLarge is a file larger than WalkTree's limit.
var ErrTreeFileLarge = errors.New("agent: file larger than the limit")

// WalkTree calls fn for every entry of dir the start snapshot would record,
// in path order, by the same walk: .git and the folder skip (absolute, ""
// for none) left out, caches listed as folders, FIFOs, sockets and devices
// left out, what read denies listed by name and never opened. A regular
// file larger than maxFile is an error wrapping ErrTreeFileLarge, naming
// it.
func WalkTree(dir, skip string, read policy.ReadRules, maxFile int64, fn func(TreeEntry) error) error {
	denied, err := read.Compile()
	if err != nil {
		return err
	}
	var buf []byte
	return walkWorkspace(dir, skip, func(p, rel string, d fs.DirEntry, folder bool) error {
		e := TreeEntry{Path: rel}
		switch {
		case folder:
			e.Mode, e.Folder = fs.ModeDir|0o755, true
			return fn(e)
		case denied.Denied(rel):
			e.Denied = true
			if fi, err := os.Lstat(p); err == nil {
				e.Mode = fi.Mode()
			}
			return fn(e)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			e.Mode, e.Link, e.SHA256 = fs.ModeSymlink|0o777, link, sum([]byte(link))
			return fn(e)
		case !d.Type().IsRegular():
			return nil
		}
		data, st, err := readBounded(p, maxFile, buf)
		switch {
		case errors.Is(err, errTooLarge):
			return fmt.Errorf("%s: %d bytes: %w of %d", showPath(rel), st.Size, ErrTreeFileLarge, maxFile)
		case errors.Is(err, errNotRegular):
			return nil // replaced by something else while walked
		case err != nil:
			return err
		}
		buf = data
		e.Mode, e.Data, e.SHA256 = st.Mode, data, sum(data)
		return fn(e)
	})
}
