package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/llm/llmtest"
)

// A 10 MB reply is a model error under the default 1 MiB cap, retried like
// any other, plain or streamed, from either provider; a reply within the
// cap still arrives whole.
func TestReplyOverCapIsRetriedModelError(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 10<<20)
	for _, kind := range []string{"openai", "anthropic"} {
		for _, stream := range []bool{false, true} {
			name := kind
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				// Chunks of 64 KiB: the fake server's cost of 5-byte events
				// would be the test's whole time.
				srv := llmtest.NewServer(t, llmtest.WithChunkSize(64<<10))
				srv.Enqueue(llmtest.Text(huge), llmtest.Text(huge), llmtest.Text("short"))
				var p llm.Model
				var err error
				if kind == "openai" {
					p, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "m", Stream: stream,
						MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
				} else {
					p, err = llm.NewAnthropic(llm.AnthropicConfig{BaseURL: srv.AnthropicURL(), APIKey: fakeKey, Model: "m", Stream: stream,
						MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
				}
				if err != nil {
					t.Fatal(err)
				}
				var retries []llm.Retry
				ctx := llm.WithRetryObserver(context.Background(), func(r llm.Retry) { retries = append(retries, r) })
				resp, err := p.Complete(ctx, userReq("hi"))
				if err != nil || resp.Message.Content != "short" {
					t.Fatalf("reply %q, err %v: want the third, short reply", resp.Message.Content, err)
				}
				if len(retries) != 2 || len(srv.Requests()) != 3 {
					t.Fatalf("%d retries, %d requests; want 2 and 3", len(retries), len(srv.Requests()))
				}
				for _, r := range retries {
					if !errors.Is(r.Err, llm.ErrReplyTooLarge) || !strings.Contains(r.Err.Error(), "1 MiB") {
						t.Errorf("retry error %v: want ErrReplyTooLarge naming the cap", r.Err)
					}
				}
			})
		}
	}
}

// Once the retries are spent the error wraps ErrReplyTooLarge; a cap from
// the config applies, and a bad one is refused.
func TestReplyCapConfigured(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Text(strings.Repeat("y", 5000)))
	p, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "m", MaxRetries: -1, MaxReplyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(context.Background(), userReq("hi"))
	if !errors.Is(err, llm.ErrReplyTooLarge) || !strings.Contains(err.Error(), "4 KiB") {
		t.Fatalf("err %v: want ErrReplyTooLarge of 4 KiB", err)
	}
	if _, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: fakeKey, Model: "m", MaxReplyBytes: -1}); err == nil || !strings.Contains(err.Error(), "max_reply_bytes") {
		t.Errorf("negative cap: err %v", err)
	}
}
