package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
)

// notInFunctionName matches what a model's function name may not hold;
// MCP tool names may (dots and slashes: "files.read", "repo/list").
var notInFunctionName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// maxFunctionName is the longest function name the model APIs accept.
const maxFunctionName = 64

// functionNames maps a server's tool names to the model's function-name
// alphabet ([a-zA-Z0-9_-]{1,64}) as mcp__<server>__<tool>. A name that
// fits is kept as it is, so policy rules name it as the server does; one
// that does not has each other character replaced by _ and, when that
// collides with another tool's name or is too long, a short hash of the
// original added, so that no two tools share a function name. The map
// from function name back to the server's name is kept by each tool
// (mcpTool.remote): the call always goes to the name the server gave.
// skipped says which names could not be mapped (two identical names).
func functionNames(server string, remote []string) (names map[string]string, skipped map[string]string) {
	prefix := MCPPrefix + server + "__"
	plain := make(map[string]string, len(remote)) // remote → first choice
	taken := map[string][]string{}                // first choice → remotes
	for _, r := range remote {
		n := prefix + notInFunctionName.ReplaceAllString(r, "_")
		plain[r] = n
		taken[n] = append(taken[n], r)
	}
	names, skipped = map[string]string{}, map[string]string{}
	used := map[string]string{}
	// Names kept unchanged first: they win over a mapped one that
	// collides with them.
	order := slices.Clone(remote)
	slices.SortStableFunc(order, func(a, b string) int {
		ka, kb := plain[a] == prefix+a && len(plain[a]) <= maxFunctionName, plain[b] == prefix+b && len(plain[b]) <= maxFunctionName
		switch {
		case ka && !kb:
			return -1
		case kb && !ka:
			return 1
		}
		return 0
	})
	for _, r := range order {
		if r == "" {
			skipped[r] = "the server lists a tool without a name"
			continue
		}
		n := plain[r]
		if kept := n == prefix+r && len(n) <= maxFunctionName; !kept && (len(n) > maxFunctionName || len(taken[n]) > 1) {
			n = withHash(n, r)
		}
		if other, ok := used[n]; ok {
			skipped[r] = fmt.Sprintf("its function name %s is taken by the tool %q", n, other)
			continue
		}
		used[n] = r
		names[r] = n
	}
	return names, skipped
}

// withHash shortens n to fit a function name with _ and 8 hex digits of
// the original name's hash after it.
func withHash(n, original string) string {
	sum := sha256.Sum256([]byte(original))
	h := "_" + hex.EncodeToString(sum[:4])
	if len(n)+len(h) > maxFunctionName {
		n = n[:maxFunctionName-len(h)]
	}
	return n + h
}
