package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/trioagent/trio/dist/store"
)

func TestFolderPutGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "runs/a/x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	for _, v := range []string{"one", "two"} {
		if err := s.Put(ctx, "runs/a/x", strings.NewReader(v)); err != nil {
			t.Fatal(err)
		}
		got, err := store.ReadAll(ctx, s, "runs/a/x")
		if err != nil || string(got) != v {
			t.Fatalf("Get = %q, %v; want %q", got, err, v)
		}
	}
	if err := s.PutIfAbsent(ctx, "runs/a/x", strings.NewReader("three")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("PutIfAbsent over a value: %v, want ErrExists", err)
	}
	if got, _ := store.ReadAll(ctx, s, "runs/a/x"); string(got) != "two" {
		t.Fatalf("a refused PutIfAbsent changed the value to %q", got)
	}
	// No temporary file is left behind.
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

func TestFolderRefusesBadKeys(t *testing.T) {
	t.Parallel()
	s, err := store.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "../x", "a//b", "a/./b", "/abs", "a/b c", "a/.tmp-x"} {
		if err := s.Put(context.Background(), k, strings.NewReader("v")); err == nil {
			t.Errorf("Put(%q) succeeded, want an error", k)
		}
	}
}

// TestFolderPutIfAbsentOneWinner races writers for one key: exactly one
// succeeds, every other gets ErrExists, and the value is the winner's
// whole.
func TestFolderPutIfAbsentOneWinner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := store.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	for round := range 20 {
		key := fmt.Sprintf("runs/r/commit/%d", round)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			winner []int
			start  = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				val := bytes.Repeat([]byte{byte('a' + i%26)}, 4096)
				err := s.PutIfAbsent(ctx, key, bytes.NewReader(val))
				switch {
				case err == nil:
					mu.Lock()
					winner = append(winner, i)
					mu.Unlock()
				case !errors.Is(err, store.ErrExists):
					t.Errorf("writer %d: %v", i, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winner) != 1 {
			t.Fatalf("round %d: %d writers won, want 1", round, len(winner))
		}
		got, err := store.ReadAll(ctx, s, key)
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Repeat([]byte{byte('a' + winner[0]%26)}, 4096)
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: the value is not the winner's whole", round)
		}
	}
}
