package sandbox

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

//go:embed trustedgo.yaml
var trustedGoYAML []byte

type trustedGoTable struct {
	Commands []string `yaml:"commands"`
	Flags    map[string]struct {
		Value bool `yaml:"value"`
	} `yaml:"flags"`
}

var trustedGo = sync.OnceValues(func() (trustedGoTable, error) {
	var t trustedGoTable
	if err := yaml.UnmarshalWithOptions(trustedGoYAML, &t, yaml.Strict()); err != nil {
		return t, fmt.Errorf("sandbox: trustedgo.yaml: %w", err)
	}
	return t, nil
})

// TrustedGo reports whether argv may run as a trusted build: the go
// command (by that name, found on the sandbox's read-only PATH) with a
// subcommand that the table trustedgo.yaml knows, with only the flags it
// lists (whatever follows -args is the test binaries' and may be
// anything). Such a command runs nothing of the workspace's as the go
// command: what it compiles is the toolchain's work, and a sandbox runs
// the programs it builds (test binaries, through -exec) confined further,
// where they cannot reach the go command, its work folder or the build
// cache. So the build cache such commands write may be shared with the
// Critic's checks: it holds what the toolchain built from the workspace's
// sources and the results of the tests as they ran.
//
// Only argv is judged; the sandbox gives the command its own environment.
// An argument that starts with a dash and is not listed, or a flag whose
// value is missing or looks like a flag, makes the command an ordinary
// one.
func TrustedGo(argv []string) bool {
	t, err := trustedGo()
	if err != nil || len(argv) < 2 || argv[0] != "go" || !slices.Contains(t.Commands, argv[1]) {
		return false
	}
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		if a == "-args" || a == "--args" {
			return true // the rest is the test binaries'
		}
		if !strings.HasPrefix(a, "-") {
			continue // a package
		}
		bare := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(bare, "=")
		f, ok := t.Flags[name]
		if !ok || len(a)-len(bare) > 2 {
			return false
		}
		if f.Value && !hasValue {
			if i+1 == len(argv) || strings.HasPrefix(argv[i+1], "-") {
				return false
			}
			i++
		}
	}
	return true
}
