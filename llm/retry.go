package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
)

// ErrStreamCut reports a stream that ended before the endpoint said the
// reply was complete. The partial reply is discarded, never returned.
var ErrStreamCut = errors.New("stream ended before the reply was complete")

// retry runs call until it succeeds, fails for good, or the attempts are
// spent; it returns how many attempts it made.
func (p *OpenAI) retry(ctx context.Context, call func(context.Context) (Response, error), notify func(int, time.Duration, error)) (Response, int, error) {
	for attempt := 0; ; attempt++ {
		resp, err := p.attempt(ctx, call)
		if err == nil {
			return resp, attempt + 1, nil
		}
		if ctx.Err() != nil {
			return Response{}, attempt + 1, errors.Join(err, context.Cause(ctx))
		}
		if !retryable(err) || attempt >= p.cfg.MaxRetries {
			return Response{}, attempt + 1, err
		}
		wait, fromServer := retryAfter(err, time.Now())
		if fromServer && wait > p.cfg.MaxRetryAfter {
			return Response{}, attempt + 1, fmt.Errorf("endpoint asks to retry after %s, more than max_retry_after %s: %w", wait, p.cfg.MaxRetryAfter, err)
		}
		if !fromServer {
			wait = backoff(p.cfg.BackoffBase, p.cfg.BackoffMax, attempt)
		}
		if notify != nil {
			notify(attempt+1, wait, err)
		}
		if err := sleep(ctx, wait); err != nil {
			return Response{}, attempt + 1, errors.Join(err, context.Cause(ctx))
		}
	}
}

// attempt runs one call under the per-attempt timeout.
func (p *OpenAI) attempt(ctx context.Context, call func(context.Context) (Response, error)) (Response, error) {
	if p.cfg.Timeout <= 0 {
		return call(ctx)
	}
	actx, cancel := context.WithTimeoutCause(ctx, p.cfg.Timeout, errAttemptTimeout{p.cfg.Timeout})
	defer cancel()
	resp, err := call(actx)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", context.Cause(actx), err)
	}
	return resp, err
}

type errAttemptTimeout struct{ d time.Duration }

func (e errAttemptTimeout) Error() string {
	return fmt.Sprintf("no complete reply within timeout %s", e.d)
}
func (e errAttemptTimeout) Timeout() bool   { return true }
func (e errAttemptTimeout) Is(t error) bool { return t == context.DeadlineExceeded }

// sdkBadJSON is how openai-go reports a response body that is not JSON.
const sdkBadJSON = "error parsing response json"

// retryable says whether err is worth another attempt: rate limits,
// server errors, timeouts, connection failures and cut streams.
func retryable(err error) bool {
	// A complete body that is not JSON is the endpoint's bug, not bad luck.
	if strings.Contains(err.Error(), sdkBadJSON) {
		return false
	}
	if s := statusOf(err); s != 0 {
		return s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStreamCut) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return !errors.Is(err, context.Canceled)
	}
	// The SDK reports a body cut while reading it this way.
	return strings.Contains(err.Error(), "error reading response body")
}

// statusOf is the HTTP status of an API error, or 0.
func statusOf(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// retryAfter reads retry-after-ms or Retry-After (seconds or an HTTP date)
// from an API error's response.
func retryAfter(err error, now time.Time) (time.Duration, bool) {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.Response == nil {
		return 0, false
	}
	return parseRetryAfter(apiErr.Response.Header, now)
}

func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// backoff is exponential backoff with full jitter: a uniform wait in
// [0, min(max, base·2^attempt)].
func backoff(base, max time.Duration, attempt int) time.Duration {
	ceil := max
	if attempt < 30 {
		if c := base << attempt; c > 0 && c < max {
			ceil = c
		}
	}
	return rand.N(ceil + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry describes one failed attempt that the provider retries.
type Retry struct {
	// Agent is the role of the request (Request.Agent).
	Agent string
	// Attempt is the 1-based number of the attempt that failed.
	Attempt int
	// Status is the HTTP status of the failure, 0 when there was none (a
	// timeout, a refused or cut connection, a cut stream).
	Status int
	// Wait is how long the provider waits before the next attempt.
	Wait time.Duration
	// Err is the failure, scrubbed of the API key.
	Err error
}

type retryObserverKey struct{}

// WithRetryObserver returns a copy of ctx whose model calls report each
// retried attempt to fn, synchronously, before the wait. It lets a caller
// that does not build the provider (the agent, for its trace and report)
// see retries per call; models without retries ignore it.
func WithRetryObserver(ctx context.Context, fn func(Retry)) context.Context {
	return context.WithValue(ctx, retryObserverKey{}, fn)
}

// retryObserver is the function WithRetryObserver put in ctx, or nil.
func retryObserver(ctx context.Context) func(Retry) {
	fn, _ := ctx.Value(retryObserverKey{}).(func(Retry))
	return fn
}
