package store

import (
	"context"
	"errors"
	"io"
)

// ErrNotFound is a Get of a key nothing was put under.
var ErrNotFound = errors.New("store: not found")

// ErrExists is a PutIfAbsent of a key that already holds a value: another
// writer was first.
var ErrExists = errors.New("store: key exists")

// Store keeps values under keys. Keys are slash-separated paths of
// letters, digits, '-', '_' and '.' (no empty, "." or ".." segment). A
// value is written whole or not at all: a reader never sees part of one.
type Store interface {
	// Put writes value under key, replacing what was there.
	Put(ctx context.Context, key string, value io.Reader) error
	// Get opens the value under key; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// PutIfAbsent writes value under key only if the key holds nothing:
	// of writers racing for one key exactly one succeeds, the others get
	// ErrExists.
	PutIfAbsent(ctx context.Context, key string, value io.Reader) error
}

// ReadAll is the whole value under key.
func ReadAll(ctx context.Context, s Store, key string) ([]byte, error) {
	r, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
