package llm

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"
)

// endpointSettings are the settings every provider shares, by reference
// into the provider's own config, so that one function checks them and
// fills in the defaults.
type endpointSettings struct {
	provider                              string // "openai", "anthropic": for errors
	baseURL, apiKeyEnv, structuredOutputs *string
	apiKey                                Secret
	model                                 string
	models                                map[string]string
	maxTokens, maxRetries                 *int
	timeout, backoffBase, backoffMax      *time.Duration
	maxRetryAfter                         *time.Duration
}

// check validates the shared settings, fills in their defaults
// (defaultURL and defaultKeyEnv are the provider's; an empty base URL is
// baseURLEnv's value, as the provider's SDK reads it, else defaultURL) and
// returns the API key: the configured one, else the environment variable's.
func (e endpointSettings) check(defaultURL, defaultKeyEnv, baseURLEnv string) (string, error) {
	from := "base_url"
	if *e.baseURL == "" {
		*e.baseURL, from = os.Getenv(baseURLEnv), "$"+baseURLEnv
	}
	if *e.baseURL == "" {
		*e.baseURL = defaultURL
	}
	u, err := url.Parse(*e.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("llm: %s %s %q: want an http(s) URL", e.provider, from, redactURL(*e.baseURL))
	}
	if *e.apiKeyEnv == "" {
		*e.apiKeyEnv = defaultKeyEnv
	}
	if e.model == "" && len(e.models) == 0 {
		return "", fmt.Errorf("llm: %s: no model configured (set model, or models per role)", e.provider)
	}
	for role, m := range e.models {
		if m == "" {
			return "", fmt.Errorf("llm: %s: models.%s is empty", e.provider, role)
		}
	}
	switch *e.structuredOutputs {
	case "":
		*e.structuredOutputs = StructuredAuto
	case StructuredAuto, StructuredOn, StructuredOff:
	default:
		return "", fmt.Errorf("llm: %s: structured_outputs %q: want auto, on or off", e.provider, *e.structuredOutputs)
	}
	if *e.maxTokens < 0 {
		return "", fmt.Errorf("llm: %s: max_tokens %d is negative", e.provider, *e.maxTokens)
	}
	if *e.timeout == 0 {
		*e.timeout = DefaultTimeout
	}
	switch r := *e.maxRetries; {
	case r > MaxRetriesLimit:
		return "", fmt.Errorf("llm: %s: max_retries %d: at most %d (each retry waits up to %s)", e.provider, r, MaxRetriesLimit, DefaultBackoffMax)
	case r == 0:
		*e.maxRetries = DefaultMaxRetries
	case r < 0:
		*e.maxRetries = 0
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{e.backoffBase, DefaultBackoffBase}, {e.backoffMax, DefaultBackoffMax}, {e.maxRetryAfter, DefaultMaxRetryAfter}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	key := string(e.apiKey)
	if key == "" {
		key = os.Getenv(*e.apiKeyEnv)
	}
	if key == "" {
		return "", errors.New("llm: " + e.provider + ": environment variable " + *e.apiKeyEnv + " holds no API key")
	}
	return key, nil
}
