package llm

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxReplyBytes is the largest response body (a reply, or all the
// events of a streamed one) a provider reads unless MaxReplyBytes says
// otherwise. A reply within max_tokens is far smaller; a larger body is a
// broken or hostile endpoint, and reading it whole would hold it in memory
// and store it in the run's records.
const DefaultMaxReplyBytes = 1 << 20

// MaxReplyBytesLimit bounds MaxReplyBytes.
const MaxReplyBytesLimit = 1 << 30

// ErrReplyTooLarge reports a response body longer than the provider's
// MaxReplyBytes. It is a model error that the retry policy retries (a
// model's next reply may be shorter); the body is never read past the
// cap, and nothing of it is returned.
var ErrReplyTooLarge = errors.New("reply larger than the cap")

// replyTooLarge is ErrReplyTooLarge with the cap.
type replyTooLarge struct{ limit int64 }

func (e replyTooLarge) Error() string {
	return fmt.Sprintf("%s of %s (max_reply_bytes)", ErrReplyTooLarge, sizeText(e.limit))
}

func (e replyTooLarge) Unwrap() error { return ErrReplyTooLarge }

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// maxReplyBytes checks a configured cap and fills in the default.
func maxReplyBytes(provider string, n *int64) error {
	switch {
	case *n < 0 || *n > MaxReplyBytesLimit:
		return fmt.Errorf("llm: %s: max_reply_bytes %d: want 1 to %d (0 for the default %d)", provider, *n, MaxReplyBytesLimit, DefaultMaxReplyBytes)
	case *n == 0:
		*n = DefaultMaxReplyBytes
	}
	return nil
}

// capReplies is the SDKs' middleware (both have the same signature) that
// makes every response body fail with replyTooLarge once limit bytes are
// read.
func capReplies(limit int64) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		resp, err := next(req)
		if err != nil || resp == nil || resp.Body == nil {
			return resp, err
		}
		if resp.ContentLength > limit {
			resp.Body.Close()
			resp.Body = io.NopCloser(errReader{replyTooLarge{limit}})
			resp.ContentLength = -1
			return resp, nil
		}
		resp.Body = &cappedBody{rc: resp.Body, left: limit, limit: limit}
		return resp, nil
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// cappedBody reads at most limit bytes of rc; a byte more is an error.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, replyTooLarge{b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
