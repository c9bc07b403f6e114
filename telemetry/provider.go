package telemetry

import (
	_ "embed"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

//go:embed providers.txt
var providersText string

type providerRule struct{ host, name string }

var providerRules = sync.OnceValue(func() []providerRule {
	var out []providerRule
	for _, line := range strings.Split(providersText, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		out = append(out, providerRule{host: strings.ToLower(f[0]), name: f[1]})
	}
	return out
})

// ProviderName is gen_ai.provider.name for an endpoint of kind (openai,
// anthropic) at baseURL: the name providers.txt gives the URL's host,
// else kind. An empty baseURL is the kind's own API.
func ProviderName(kind, baseURL string) string {
	host, port := Server(baseURL)
	if host == "" {
		return kind
	}
	hp := host + ":" + strconv.Itoa(port)
	for _, r := range providerRules() {
		switch {
		case strings.HasPrefix(r.host, "."):
			if strings.HasSuffix(host, r.host) {
				return r.name
			}
		case strings.Contains(r.host, ":"):
			if hp == r.host {
				return r.name
			}
		case host == r.host:
			return r.name
		}
	}
	return kind
}

// Server is the host and port of baseURL, for server.address and
// server.port: the scheme's port when the URL names none; "" and 0 for a
// URL without a host.
func Server(baseURL string) (host string, port int) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return "", 0
	}
	host = strings.ToLower(u.Hostname())
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return host, p
	}
	if u.Scheme == "http" {
		return host, 80
	}
	return host, 443
}
