// Package replay serves an llm.Model (the scripted model, for the demo and
// TRIO_SCRIPT runs) over HTTP on loopback as an OpenAI-compatible chat
// completions endpoint, so that the real OpenAI provider talks to it and a
// scripted run goes through the production path.
//
// It is production code, linked into the trio binary; the fakes that
// inject faults and record requests for tests are in llm/llmtest, which
// the binary must not link. It answers plain (not streamed) requests
// only, listens on 127.0.0.1 only, and knows nothing of Trio's roles
// except what the request's model name says.
package replay
