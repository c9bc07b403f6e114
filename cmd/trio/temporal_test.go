package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/trioagent/trio/dist/flow"
	"github.com/trioagent/trio/dist/store"
	"github.com/trioagent/trio/dist/store/storetest"
)

// TestTemporalUsageErrors: the Temporal commands refuse what they cannot
// use before they dial anything (exit 3, naming what is wrong).
func TestTemporalUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "no store: give --store DIR or set TRIO_STORE"},
		{[]string{"worker", "--parallel", "0", "--store", "s"}, "--parallel 0: want at least 1"},
		{[]string{"run", "--temporal", "--goal", "x"}, "no store: give --store DIR or set TRIO_STORE"},
		{[]string{"run", "--temporal"}, "no goal"},
		{[]string{"confirm", "r1", "maybe"}, `answer "maybe": want yes, no or always`},
		{[]string{"confirm"}, "accepts between 1 and 2 arg"},
		{[]string{"status"}, "accepts 1 arg"},
		{[]string{"run", "--temporal", "--goal", "x", "--workspace", "w"}, "--workspace does not go with --temporal"},
		{[]string{"run", "--temporal", "--goal", "x", "--model", "m"}, "--model does not go with --temporal"},
		{[]string{"eval", suiteDir(t), "--temporal", "--tasks", "py-roman"}, "no store: give --store DIR or set TRIO_STORE"},
		{[]string{"worker", "--store", "gs://b/p"}, `store "gs://b/p": want a folder or s3://BUCKET/PREFIX`},
		{[]string{"run", "--temporal", "--goal", "x", "--store", "s3:///p"}, `store "s3:///p": want s3://BUCKET/PREFIX`},
		{[]string{"run", "--temporal", "--goal", "x", "--store", "s3://b/p?region=x"}, `store "s3://b/p?region=x": want s3://BUCKET/PREFIX`},
		{[]string{"worker", "--store", "s3://b/../p"}, `store s3://b/../p: store: s3 prefix: store: key "../p": bad segment ".."`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := trio(t, dir, []string{"TRIO_STORE="}, tt.args...)
			if r.code != exitConfig || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 3 with %q:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
}

// TestTemporalS3Store: --store s3://BUCKET/PREFIX selects the S3 store at
// the endpoint and with the credentials of the AWS SDK's environment
// variables. trio run --temporal puts the goal in the store before it
// dials Temporal (nothing listens there): the goal is in the bucket under
// the prefix, read back through the S3 store, and the failed dial is not
// a config error.
func TestTemporalS3Store(t *testing.T) {
	t.Parallel()
	cfg := storetest.FakeS3(t, "team")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	r := trio(t, t.TempDir(), cleanEnv("AWS_ENDPOINT_URL_S3="+cfg.Endpoint, "AWS_ENDPOINT_URL=", "AWS_ACCESS_KEY_ID=test-key",
		"AWS_SECRET_ACCESS_KEY=test-secret", "AWS_SESSION_TOKEN=", "AWS_REGION=us-east-1", "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "TEMPORAL_ADDRESS="+closed),
		"run", "--temporal", "--goal", "the goal over S3", "--run-id", "r-s3", "--store", "s3://"+storetest.FakeBucket+"/team")
	if r.code == exitOK || r.code == exitConfig || !strings.Contains(r.stderr, "temporal at "+closed) {
		t.Fatalf("exit %d, want the dial to %s to fail:\n%s", r.code, closed, r.stderr)
	}
	st, err := store.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.ReadAll(context.Background(), st, flow.GoalKey("r-s3"))
	if err != nil || string(got) != "the goal over S3" {
		t.Fatalf("the goal in the bucket: %q, %v", got, err)
	}
}
