// Package llmtest is a fake OpenAI-compatible endpoint for tests: an
// httptest server on loopback that answers POST /v1/chat/completions from a
// queue of scripted replies (text, tool calls, usage, structured JSON),
// plain or streamed as server-sent events, and injects faults on request:
// 429 with Retry-After, 5xx, malformed JSON, a stream cut mid-way, a slow
// reply, and 400 for response_format on endpoints without structured
// outputs. It records every request body for assertions. The same server
// answers the Anthropic Messages API on POST /v1/messages (AnthropicURL)
// in the real API's shapes — content blocks, tool_use, the SSE event
// sequence, error bodies and usage with cache_read_input_tokens and
// cache_creation_input_tokens — from the same queue.
//
// With [WithModel] it serves any llm.Model, such as the scripted model, over
// HTTP, so the real provider can be driven end to end.
//
// It must not reach the network beyond loopback, and it knows nothing of
// Trio's roles or tools except what a request carries.
package llmtest
