package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/trioagent/trio/dist/store"
)

// FakeBucket is the bucket FakeS3 creates.
const FakeBucket = "trio"

// FakeS3 starts an S3-compatible server on loopback for the test's
// lifetime (gofakes3 over memory, with bucket FakeBucket) and is the
// config of a store in it under prefix, with static credentials. The
// fake honours If-None-Match: * on PutObject, checking for the key and
// writing it under one lock, as S3 does: a race on a key has one winner.
func FakeS3(t testing.TB, prefix string) store.S3Config {
	t.Helper()
	srv := FakeS3Server(t)
	return store.S3Config{
		Endpoint:     srv,
		Bucket:       FakeBucket,
		Prefix:       prefix,
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test-key", "test-secret", ""),
	}
}

// FakeS3Server starts the server FakeS3 uses and is its URL.
func FakeS3Server(t testing.TB) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(FakeBucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

// NewFakeS3 is a store in a fresh FakeS3.
func NewFakeS3(t testing.TB) *store.S3 {
	t.Helper()
	s, err := store.NewS3(context.Background(), FakeS3(t, "p/q"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Contract tests what every store.Store must do, on fresh stores from
// open: a round trip, a missing key, PutIfAbsent over a value, a race of
// PutIfAbsent writers with exactly one winner, and the same bad keys
// refused.
func Contract(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("PutGet", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t)
		if _, err := s.Get(ctx, "runs/a/x"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
		}
		for _, v := range []string{"one", "two", ""} {
			if err := s.Put(ctx, "runs/a/x", strings.NewReader(v)); err != nil {
				t.Fatal(err)
			}
			got, err := store.ReadAll(ctx, s, "runs/a/x")
			if err != nil || string(got) != v {
				t.Fatalf("Get = %q, %v; want %q", got, err, v)
			}
		}
		if err := s.Put(ctx, "runs/a/x", strings.NewReader("two")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutIfAbsent(ctx, "runs/a/x", strings.NewReader("three")); !errors.Is(err, store.ErrExists) {
			t.Fatalf("PutIfAbsent over a value: %v, want ErrExists", err)
		}
		if got, _ := store.ReadAll(ctx, s, "runs/a/x"); string(got) != "two" {
			t.Fatalf("a refused PutIfAbsent changed the value to %q", got)
		}
		if err := s.PutIfAbsent(ctx, "runs/a/y", strings.NewReader("new")); err != nil {
			t.Fatalf("PutIfAbsent of a missing key: %v", err)
		}
		if got, err := store.ReadAll(ctx, s, "runs/a/y"); err != nil || string(got) != "new" {
			t.Fatalf("Get after PutIfAbsent = %q, %v; want new", got, err)
		}
		// A reader that is not a ReadSeeker is stored whole too.
		big := bytes.Repeat([]byte("0123456789"), 100_000)
		if err := s.Put(ctx, "blobs/big", struct{ *bytes.Reader }{bytes.NewReader(big)}); err != nil {
			t.Fatal(err)
		}
		if got, err := store.ReadAll(ctx, s, "blobs/big"); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("Get of a 1 MB value: %d bytes, %v", len(got), err)
		}
	})
	t.Run("BadKeys", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t)
		for _, k := range []string{"", "../x", "a//b", "a/./b", "/abs", "a/", "a/b c", "a/.tmp-x", "a/b?c", "a/\xff"} {
			if err := s.Put(ctx, k, strings.NewReader("v")); err == nil {
				t.Errorf("Put(%q) succeeded, want an error", k)
			}
			if err := s.PutIfAbsent(ctx, k, strings.NewReader("v")); err == nil || errors.Is(err, store.ErrExists) {
				t.Errorf("PutIfAbsent(%q) = %v, want an error naming the key", k, err)
			}
			if _, err := s.Get(ctx, k); err == nil || errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want an error naming the key", k, err)
			}
		}
	})
	t.Run("PutIfAbsentOneWinner", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s := open(t)
		const n = 16
		for round := range 10 {
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
	})
}
