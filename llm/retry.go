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

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// ErrStreamCut reports a stream that ended before the endpoint said the
// reply was complete. The partial reply is discarded, never returned.
var ErrStreamCut = errors.New("stream ended before the reply was complete")

// retryPolicy is the one retry mechanism of every provider: attempts
// under a per-attempt timeout, Retry-After honoured (up to maxAfter),
// otherwise exponential backoff with full jitter. The SDKs' own retries
// are switched off so that this is the one that runs and is tested.
type retryPolicy struct {
	maxRetries          int
	base, max, maxAfter time.Duration
	timeout             time.Duration
}

// retry runs call until it succeeds, fails for good, or the attempts are
// spent; it returns how many attempts it made.
func (rp retryPolicy) retry(ctx context.Context, call func(context.Context) (Response, error), notify func(int, time.Duration, error)) (Response, int, error) {
	for attempt := 0; ; attempt++ {
		resp, err := rp.attempt(ctx, call)
		if err == nil {
			return resp, attempt + 1, nil
		}
		if ctx.Err() != nil {
			return Response{}, attempt + 1, errors.Join(err, context.Cause(ctx))
		}
		if !retryable(err) || attempt >= rp.maxRetries {
			return Response{}, attempt + 1, err
		}
		wait, fromServer := retryAfter(err, time.Now())
		if fromServer && wait > rp.maxAfter {
			return Response{}, attempt + 1, fmt.Errorf("endpoint asks to retry after %s, more than max_retry_after %s: %w", wait, rp.maxAfter, err)
		}
		if !fromServer {
			wait = backoff(rp.base, rp.max, attempt)
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
func (rp retryPolicy) attempt(ctx context.Context, call func(context.Context) (Response, error)) (Response, error) {
	if rp.timeout <= 0 {
		return call(ctx)
	}
	actx, cancel := context.WithTimeoutCause(ctx, rp.timeout, errAttemptTimeout{rp.timeout})
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
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStreamCut) || errors.Is(err, ErrReplyTooLarge) ||
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

// statusOf is the HTTP status of an API error of either SDK, or 0.
func statusOf(err error) int {
	if s, _ := apiError(err); s != 0 {
		return s
	}
	return 0
}

// apiError is the status and response of an API error of either SDK.
func apiError(err error) (int, *http.Response) {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe.StatusCode, oe.Response
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return ae.StatusCode, ae.Response
	}
	return 0, nil
}

// retryAfter reads retry-after-ms or Retry-After (seconds or an HTTP date)
// from an API error's response.
func retryAfter(err error, now time.Time) (time.Duration, bool) {
	_, resp := apiError(err)
	if resp == nil {
		return 0, false
	}
	return parseRetryAfter(resp.Header, now)
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
