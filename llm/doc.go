// Package llm owns the model side of Trio: the provider-neutral [Model]
// interface and message types, the OpenAI-compatible provider built on
// github.com/openai/openai-go/v3 ([NewOpenAI]), the native Anthropic
// Messages API provider built on github.com/anthropics/anthropic-sdk-go/v2
// ([NewAnthropic], with prompt-cache breakpoints on the stable prefix of
// Request.CachePrefix), token usage with cached tokens and prices
// ([Usage], [Price]), the scripted model that
// replays a YAML script per agent role ([ParseScript], [LoadScript]), and the
// structured-output helpers ([SchemaOf], [DecodeOutput]).
//
// It must not know about agent roles or tools beyond their names and schemas:
// a role is only a key that picks a model or a script, a tool is only a
// definition passed through to the endpoint. It never logs, prints or puts
// into an error the API key it sends.
//
// Tools are offered as [ToolDef]s (name, description, JSON schema), which
// each provider converts to its API's form when it sends a request.
//
// A provider's Complete makes one attempt. Retries are one wrapper,
// [WithRetry] ([Retrying]: Retry-After honoured, backoff with full jitter,
// per-attempt timeouts, [WithRetryObserver]), which [NewOpenAI] and
// [NewAnthropic] put around their provider and which wraps an embedder's
// own Model the same way; the SDKs' own retries are off.
//
// The sub-package llmtest is a fake OpenAI-compatible and Anthropic
// Messages HTTP server used to test the providers over real HTTP on
// loopback.
package llm
