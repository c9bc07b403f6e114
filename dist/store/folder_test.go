package store_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/dist/store/storetest"
)

func TestFolderContract(t *testing.T) {
	t.Parallel()
	storetest.Contract(t, func(t *testing.T) store.Store {
		s, err := store.NewFolder(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestFolderLeavesNoTemporaryFile: neither a Put nor a refused
// PutIfAbsent leaves its temporary file behind.
func TestFolderLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"one", "two"} {
		if err := s.Put(ctx, "runs/a/x", strings.NewReader(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutIfAbsent(ctx, "runs/a/y", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "runs/a/y", strings.NewReader("w")); err == nil {
		t.Fatal("PutIfAbsent over a value succeeded")
	}
	var left []string
	filepath.WalkDir(s.Dir(), func(p string, d os.DirEntry, _ error) error {
		if strings.HasPrefix(d.Name(), ".tmp-") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
