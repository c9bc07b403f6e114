package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Folder is a Store in a folder, possibly shared by several hosts (NFS,
// a mounted volume): each key is a file at its path below the folder.
// Writes go to a temporary file that is synced and then renamed (Put) or
// hard-linked (PutIfAbsent) into place, so a reader sees a whole value or
// none, and link(2) fails for all but one writer of a key, on local file
// systems and on NFS alike (O_EXCL is not reliable on old NFS).
type Folder struct {
	dir string
}

// NewFolder is the store in dir, created when missing.
func NewFolder(dir string) (*Folder, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Folder{dir: dir}, nil
}

// Dir is the store's folder.
func (f *Folder) Dir() string { return f.dir }

// checkKey is nil for a key, or an error naming what makes key not one.
// Every Store refuses the same keys (".tmp-" segments are the Folder's
// temporary files; the others refuse them too, so that a store's keys can
// move between them).
func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("store: empty key")
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".tmp-") {
			return fmt.Errorf("store: key %q: bad segment %q", key, seg)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return fmt.Errorf("store: key %q: character %q", key, c)
			}
		}
	}
	return nil
}

// path is key's file, or an error naming a key that is not one.
func (f *Folder) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(f.dir, filepath.FromSlash(key)), nil
}

// temp writes value to a synced temporary file beside p.
func temp(p string, value io.Reader) (string, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	t, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(t, value)
	if err == nil {
		err = t.Sync()
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(t.Name())
		return "", err
	}
	return t.Name(), nil
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Put writes value under key (temporary file, then rename).
func (f *Folder) Put(ctx context.Context, key string, value io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := f.path(key)
	if err != nil {
		return err
	}
	t, err := temp(p, value)
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	if err := os.Rename(t, p); err != nil {
		os.Remove(t)
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	syncDir(filepath.Dir(p))
	return nil
}

// PutIfAbsent writes value under key unless it holds one (temporary file,
// then link, which fails when the key exists).
func (f *Folder) PutIfAbsent(ctx context.Context, key string, value io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); err == nil {
		return fmt.Errorf("store: %s: %w", key, ErrExists)
	}
	t, err := temp(p, value)
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	defer os.Remove(t)
	if err := os.Link(t, p); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("store: %s: %w", key, ErrExists)
		}
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	syncDir(filepath.Dir(p))
	return nil
}

// Get opens the value under key.
func (f *Folder) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	r, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("store: %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get %s: %w", key, err)
	}
	return r, nil
}
