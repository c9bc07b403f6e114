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

// RetryConfig configures [WithRetry]. Zero values mean the defaults of
// the same names (DefaultMaxRetries, DefaultTimeout, DefaultBackoffBase,
// DefaultBackoffMax, DefaultMaxRetryAfter).
type RetryConfig struct {
	// MaxRetries is how many times a failed attempt is retried (429, 5xx,
	// timeouts, connection errors, cut streams); zero means
	// DefaultMaxRetries, negative means none, more than MaxRetriesLimit
	// is an error.
	MaxRetries int
	// Timeout bounds one attempt (request and the whole reply); zero
	// means DefaultTimeout, negative means none.
	Timeout time.Duration
	// BackoffBase and BackoffMax shape the exponential backoff with full
	// jitter used when the endpoint gives no Retry-After.
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter is the longest Retry-After waited for; a longer one
	// fails the call at once.
	MaxRetryAfter time.Duration
	// OnRetry, when set, is told about every failed attempt that will be
	// retried, before the wait. A call's context can carry its own
	// observer too (WithRetryObserver).
	OnRetry func(Retry)
}

// Retrying is a [Model] that retries another's transient failures: each
// attempt under a per-attempt timeout, Retry-After honoured up to
// MaxRetryAfter, otherwise exponential backoff with full jitter. It is
// the one retry mechanism of Trio: the providers make one attempt per
// Complete and NewOpenAI and NewAnthropic wrap them in it (the SDKs' own
// retries are off), and an embedder's own Model can be wrapped the same
// way. It is safe for concurrent use if the wrapped Model is.
type Retrying struct {
	model Model
	cfg   RetryConfig
}

var _ Model = (*Retrying)(nil)

// WithRetry returns m wrapped in the retries cfg describes. Which failures
// are retried is decided on the error m returns: an HTTP status of either
// SDK (429, 408, 409, 5xx), a timeout, a refused, reset or cut connection,
// ErrStreamCut or ErrReplyTooLarge; the endpoint's Retry-After is read
// from either SDK's error.
func WithRetry(m Model, cfg RetryConfig) (*Retrying, error) {
	if m == nil {
		return nil, errors.New("llm: WithRetry: nil model")
	}
	switch r := cfg.MaxRetries; {
	case r > MaxRetriesLimit:
		return nil, fmt.Errorf("llm: max_retries %d: at most %d (each retry waits up to %s)", r, MaxRetriesLimit, DefaultBackoffMax)
	case r == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case r < 0:
		cfg.MaxRetries = 0
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.BackoffBase, DefaultBackoffBase}, {&cfg.BackoffMax, DefaultBackoffMax}, {&cfg.MaxRetryAfter, DefaultMaxRetryAfter}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return &Retrying{model: m, cfg: cfg}, nil
}

// Unwrap returns the wrapped Model (a provider's own methods, such as
// ModelFor, are reached through it).
func (r *Retrying) Unwrap() Model { return r.model }

// Config returns the retry settings in effect, defaults filled in.
func (r *Retrying) Config() RetryConfig { return r.cfg }

// Complete calls the wrapped Model until it succeeds, fails for good, or
// the attempts are spent. A failure after more than one attempt says how
// many were made ("after 3 attempts: ...").
func (r *Retrying) Complete(ctx context.Context, req Request) (Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := r.attempt(ctx, req)
		if err == nil {
			return resp, nil
		}
		fail := func(err, cause error) (Response, error) {
			if attempt > 0 {
				err = annotate(err, fmt.Errorf("after %d attempts", attempt+1))
			}
			if cause != nil {
				err = errors.Join(err, cause)
			}
			return Response{}, err
		}
		if ctx.Err() != nil {
			return fail(err, ctxErr(ctx))
		}
		if !retryable(err) || attempt >= r.cfg.MaxRetries {
			return fail(err, nil)
		}
		wait, fromServer := retryAfter(err, time.Now())
		if fromServer && wait > r.cfg.MaxRetryAfter {
			return fail(annotate(err, fmt.Errorf("endpoint asks to retry after %s, more than max_retry_after %s", wait, r.cfg.MaxRetryAfter)), nil)
		}
		if !fromServer {
			wait = backoff(r.cfg.BackoffBase, r.cfg.BackoffMax, attempt)
		}
		rt := Retry{Agent: req.Agent, Attempt: attempt + 1, Status: statusOf(err), Wait: wait, Err: err}
		if r.cfg.OnRetry != nil {
			r.cfg.OnRetry(rt)
		}
		if fn := retryObserver(ctx); fn != nil {
			fn(rt)
		}
		if sleep(ctx, wait) != nil {
			return fail(err, ctxErr(ctx))
		}
	}
}

// retryConfig is a provider config's retry settings (defaults filled in
// by endpointSettings.check).
func retryConfig(timeout time.Duration, maxRetries int, base, max, maxAfter time.Duration, onRetry func(int, time.Duration, error)) RetryConfig {
	if maxRetries == 0 {
		maxRetries = -1 // check turned "none" into 0, which WithRetry reads as the default
	}
	rc := RetryConfig{MaxRetries: maxRetries, Timeout: timeout, BackoffBase: base, BackoffMax: max, MaxRetryAfter: maxAfter}
	if onRetry != nil {
		rc.OnRetry = func(r Retry) { onRetry(r.Attempt, r.Wait, r.Err) }
	}
	return rc
}

// ctxErr is why ctx is done: its cause, and ctx.Err() too when the cause
// is another error, so that errors.Is finds both.
func ctxErr(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, ctx.Err()) {
		return cause
	}
	return errors.Join(ctx.Err(), cause)
}

// attempt makes one call under the per-attempt timeout.
func (r *Retrying) attempt(ctx context.Context, req Request) (Response, error) {
	if r.cfg.Timeout <= 0 {
		return r.model.Complete(ctx, req)
	}
	actx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout, errAttemptTimeout{r.cfg.Timeout})
	defer cancel()
	resp, err := r.model.Complete(actx, req)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		err = annotate(err, context.Cause(actx))
	}
	return resp, err
}

// annotate puts note before err's cause, keeping both in the chain. A
// provider's error keeps its endpoint, model and agent first.
func annotate(err, note error) error {
	if pe, ok := err.(*providerError); ok {
		return &providerError{
			where: pe.where,
			msg:   pe.where + ": " + note.Error() + ": " + strings.TrimPrefix(pe.msg, pe.where+": "),
			err:   fmt.Errorf("%w: %w", note, pe.err),
			also:  pe.also,
		}
	}
	return fmt.Errorf("%w: %w", note, err)
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

// Retry describes one failed attempt that Retrying retries.
type Retry struct {
	// Agent is the role of the request (Request.Agent).
	Agent string
	// Attempt is the 1-based number of the attempt that failed.
	Attempt int
	// Status is the HTTP status of the failure, 0 when there was none (a
	// timeout, a refused or cut connection, a cut stream).
	Status int
	// Wait is how long Retrying waits before the next attempt.
	Wait time.Duration
	// Err is the failure (a provider's is scrubbed of the API key).
	Err error
}

type retryObserverKey struct{}

// WithRetryObserver returns a copy of ctx whose model calls report each
// retried attempt to fn, synchronously, before the wait. It lets a caller
// that does not build the provider (the agent, for its trace and report)
// see retries per call; models not wrapped in Retrying ignore it.
func WithRetryObserver(ctx context.Context, fn func(Retry)) context.Context {
	return context.WithValue(ctx, retryObserverKey{}, fn)
}

// retryObserver is the function WithRetryObserver put in ctx, or nil.
func retryObserver(ctx context.Context) func(Retry) {
	fn, _ := ctx.Value(retryObserverKey{}).(func(Retry))
	return fn
}
