package llm

// Price is what a model costs, in money per million tokens (the currency
// is whatever the price table is written in). Every field is explicit: a
// zero is a zero price, so whoever builds a Price from partial data decides
// what an unknown cached price falls back to.
type Price struct {
	// Input is the price of prompt tokens neither read from nor written
	// to the cache.
	Input float64 `json:"input" yaml:"input"`
	// CachedInput is the price of prompt tokens read from the cache.
	CachedInput float64 `json:"cached_input" yaml:"cached_input"`
	// CacheWrite is the price of prompt tokens written to the cache.
	CacheWrite float64 `json:"cache_write" yaml:"cache_write"`
	// Output is the price of completion tokens.
	Output float64 `json:"output" yaml:"output"`
}

// Cost is the money u costs at p. The uncached prompt tokens are the
// prompt tokens less the cached and cache-write ones (never below zero,
// should an endpoint report inconsistent figures).
func (p Price) Cost(u Usage) float64 {
	uncached := max(u.PromptTokens-u.CachedPromptTokens-u.CacheWriteTokens, 0)
	return (float64(uncached)*p.Input + float64(u.CachedPromptTokens)*p.CachedInput +
		float64(u.CacheWriteTokens)*p.CacheWrite + float64(u.CompletionTokens)*p.Output) / 1e6
}
