package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is PATH inside a sandbox when the host has none.
const DefaultPath = "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// PassEnv lists host variables copied into a command's environment when set.
// Nothing else of the host's environment is passed: no API keys, tokens,
// SSH agent sockets or cloud credentials.
var PassEnv = []string{"LANG", "LC_ALL", "LC_CTYPE", "TZ", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOSUMDB"}

// BaseEnv returns the allow-listed environment for commands: PATH (the
// host's PATH, else DefaultPath), HOME=home, TMPDIR (Local only; empty
// tmp omits it), TERM=dumb, GOTOOLCHAIN=local (never download a toolchain),
// PYTHONDONTWRITEBYTECODE=1 (no __pycache__ folders left in the workspace),
// the PassEnv variables, and extra entries last (a later key wins).
func BaseEnv(path, home, tmp string, extra ...string) []string {
	if path == "" {
		path = DefaultPath
	}
	env := []string{"PATH=" + path, "HOME=" + home, "TERM=dumb", "GOTOOLCHAIN=local", "PYTHONDONTWRITEBYTECODE=1"}
	if tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	for _, k := range PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return MergeEnv(env, extra)
}

// MergeEnv appends extra to base; a key in extra replaces the same key in
// base (or an earlier one in extra), keeping the first one's position.
func MergeEnv(base, extra []string) []string {
	out := make([]string, 0, len(base)+len(extra))
	seen := map[string]int{}
	for _, kv := range append(base[:len(base):len(base)], extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[k]; ok {
			out[i] = kv
			continue
		}
		seen[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// EnvValue is key's value in env (the last one wins, as in MergeEnv), ""
// when it is not there.
func EnvValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// hostGoPath is the host's GOPATH: $GOPATH, else ~/go; "" when unknown.
func hostGoPath() string {
	if v := os.Getenv("GOPATH"); v != "" {
		return v
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, "go")
	}
	return ""
}

// HostModCache is the host's Go module cache: $GOMODCACHE, else pkg/mod in
// the first GOPATH entry (see hostGoPath); "" when unknown. It may not exist.
func HostModCache() string {
	if v := os.Getenv("GOMODCACHE"); v != "" {
		return v
	}
	if gp := filepath.SplitList(hostGoPath()); len(gp) > 0 && gp[0] != "" {
		return filepath.Join(gp[0], "pkg", "mod")
	}
	return ""
}

// hostGoEnv returns the host's Go module and build caches, so commands reuse
// them (offline builds need the module cache) though HOME is fresh.
func hostGoEnv() []string {
	var env []string
	if gopath := hostGoPath(); gopath != "" {
		env = append(env, "GOPATH="+gopath)
	}
	if mc := HostModCache(); mc != "" {
		env = append(env, "GOMODCACHE="+mc)
	}
	if v := os.Getenv("GOCACHE"); v != "" {
		env = append(env, "GOCACHE="+v)
	} else if d, err := os.UserCacheDir(); err == nil {
		env = append(env, "GOCACHE="+filepath.Join(d, "go-build"))
	}
	if v := os.Getenv("GOROOT"); v != "" {
		env = append(env, "GOROOT="+v)
	}
	return env
}
