package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trioagent/trio/llm"
)

// flaky is an embedder's own Model: it fails its first calls with the
// errors given, then answers.
type flaky struct {
	errs  []error
	calls atomic.Int32
	// block makes a call wait for its context instead of failing.
	block bool
}

func (f *flaky) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := int(f.calls.Add(1))
	if f.block {
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	if n <= len(f.errs) {
		return llm.Response{}, f.errs[n-1]
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok " + req.Agent}}, nil
}

func fast(c llm.RetryConfig) llm.RetryConfig {
	c.BackoffBase, c.BackoffMax = time.Microsecond, time.Microsecond
	return c
}

// WithRetry gives an embedder's own Model the providers' retries: a cut
// stream is retried, each retry reported to OnRetry and to the context's
// observer, and the reply of the attempt that worked comes back.
func TestWithRetryWrapsCustomModel(t *testing.T) {
	t.Parallel()
	m := &flaky{errs: []error{llm.ErrStreamCut, llm.ErrStreamCut}}
	var onRetry, observed []llm.Retry
	r, err := llm.WithRetry(m, fast(llm.RetryConfig{OnRetry: func(rt llm.Retry) { onRetry = append(onRetry, rt) }}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := llm.WithRetryObserver(context.Background(), func(rt llm.Retry) { observed = append(observed, rt) })
	resp, err := r.Complete(ctx, llm.Request{Agent: "worker"})
	if err != nil || resp.Message.Content != "ok worker" {
		t.Fatalf("Complete = %q, %v", resp.Message.Content, err)
	}
	if n := m.calls.Load(); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	for name, seen := range map[string][]llm.Retry{"OnRetry": onRetry, "observer": observed} {
		if len(seen) != 2 || seen[0].Attempt != 1 || seen[1].Attempt != 2 || seen[0].Agent != "worker" ||
			!errors.Is(seen[1].Err, llm.ErrStreamCut) || seen[0].Status != 0 || seen[0].Wait > time.Microsecond {
			t.Errorf("%s saw %+v", name, seen)
		}
	}
	if r.Unwrap() != llm.Model(m) {
		t.Error("Unwrap does not return the wrapped model")
	}
}

func TestWithRetryGivesUp(t *testing.T) {
	t.Parallel()
	permanent := errors.New("bad request: unknown field")
	tests := []struct {
		name      string
		m         *flaky
		cfg       llm.RetryConfig
		calls     int32
		is        error
		want, not string
	}{
		{"not retryable", &flaky{errs: []error{permanent}}, llm.RetryConfig{}, 1, permanent, "bad request", "attempts"},
		{"attempts spent", &flaky{errs: []error{llm.ErrStreamCut, llm.ErrStreamCut, llm.ErrStreamCut}}, llm.RetryConfig{MaxRetries: 2}, 3, llm.ErrStreamCut, "after 3 attempts: ", ""},
		{"no retries", &flaky{errs: []error{llm.ErrStreamCut}}, llm.RetryConfig{MaxRetries: -1}, 1, llm.ErrStreamCut, "stream ended", "attempts"},
		{"attempt timeout", &flaky{block: true}, llm.RetryConfig{MaxRetries: -1, Timeout: 20 * time.Millisecond}, 1, context.DeadlineExceeded, "no complete reply within timeout 20ms", ""},
		{"attempt timeouts retried", &flaky{block: true}, llm.RetryConfig{MaxRetries: 1, Timeout: 20 * time.Millisecond}, 2, context.DeadlineExceeded, "after 2 attempts: no complete reply within timeout", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := llm.WithRetry(tt.m, fast(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Complete(context.Background(), llm.Request{Agent: "critic"})
			if n := tt.m.calls.Load(); n != tt.calls {
				t.Errorf("%d calls, want %d", n, tt.calls)
			}
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) || (tt.not != "" && strings.Contains(err.Error(), tt.not)) {
				t.Errorf("err = %v, want %v containing %q", err, tt.is, tt.want)
			}
		})
	}
}

// A caller's cancellation during the wait ends the call at once, with
// the attempt's failure and the cause.
func TestWithRetryCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	m := &flaky{errs: []error{llm.ErrStreamCut}}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("the run was stopped")
	r, err := llm.WithRetry(m, llm.RetryConfig{BackoffBase: time.Hour, BackoffMax: time.Hour, OnRetry: func(llm.Retry) { cancel(stop) }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Complete(ctx, llm.Request{})
	if !errors.Is(err, stop) || !errors.Is(err, context.Canceled) || !errors.Is(err, llm.ErrStreamCut) || m.calls.Load() != 1 {
		t.Errorf("err = %v after %d calls", err, m.calls.Load())
	}
}

func TestWithRetryConfig(t *testing.T) {
	t.Parallel()
	if _, err := llm.WithRetry(&flaky{}, llm.RetryConfig{MaxRetries: llm.MaxRetriesLimit + 1}); err == nil || !strings.Contains(err.Error(), "max_retries") {
		t.Errorf("too many retries: err = %v", err)
	}
	if _, err := llm.WithRetry(nil, llm.RetryConfig{}); err == nil {
		t.Error("a nil model was wrapped")
	}
	r, err := llm.WithRetry(&flaky{}, llm.RetryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config()
	if c.MaxRetries != llm.DefaultMaxRetries || c.Timeout != llm.DefaultTimeout || c.BackoffBase != llm.DefaultBackoffBase ||
		c.BackoffMax != llm.DefaultBackoffMax || c.MaxRetryAfter != llm.DefaultMaxRetryAfter {
		t.Errorf("defaults = %+v", c)
	}
}
