package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/dist/store/storetest"
)

// TestS3Contract runs the store contract against an S3 store on an
// S3-compatible server in the test (gofakes3 on loopback, which honours
// If-None-Match: * under one lock as S3 does): PutIfAbsent's one winner
// among racing writers is the server's refusal (412) of all the others.
func TestS3Contract(t *testing.T) {
	t.Parallel()
	storetest.Contract(t, func(t *testing.T) store.Store { return storetest.NewFakeS3(t) })
}

// TestS3Prefix: stores under two prefixes of one bucket do not see each
// other's keys, and a bad prefix is refused.
func TestS3Prefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := storetest.FakeS3(t, "team-a")
	a, err := store.NewS3(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "/team-b/"
	b, err := store.NewS3(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "s3://trio/team-b" {
		t.Errorf("String = %q, want s3://trio/team-b", got)
	}
	if err := a.PutIfAbsent(ctx, "runs/r/x", strings.NewReader("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "runs/r/x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("b sees a's key: %v", err)
	}
	if err := b.PutIfAbsent(ctx, "runs/r/x", strings.NewReader("b")); err != nil {
		t.Fatalf("b's PutIfAbsent of a key only a holds: %v", err)
	}
	if got, err := store.ReadAll(ctx, a, "runs/r/x"); err != nil || string(got) != "a" {
		t.Fatalf("a's value = %q, %v; want a", got, err)
	}
	cfg.Prefix = "x/../y"
	if _, err := store.NewS3(ctx, cfg); err == nil {
		t.Fatal("NewS3 with prefix x/../y succeeded")
	}
}
