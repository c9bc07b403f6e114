package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/tools"
)

// TestCommandSymlinks: run_command and run_tests judge path arguments by
// where the workspace's symlinks lead: out of the workspace, into denied
// or into read-only paths is refused; links that stay inside and reach
// allowed paths keep working.
func TestCommandSymlinks(t *testing.T) {
	t.Parallel()
	ws, log := adversarialWorkspace(t)
	for link, target := range map[string]string{"src": "app", "app/up": "..", "lib": "/usr/lib"} {
		if err := os.Symlink(target, filepath.Join(ws.Dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	p := shippedPolicy(t, "shell: false", "shell: true")
	g := tools.NewGate(p, tools.WithScope(policy.Scope{Workspace: ws.Dir, Aliases: []string{"/workspace"}}))
	reg, err := tools.NewRegistry(tools.Builtins(ws)...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := reg.View()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, args string
		ok         bool
		out        string // substring of what the model reads
	}{
		{tools.RunCommandName, `{"command":"cat etc/passwd"}`, false, `leads through a symlink to "/etc/passwd"`},
		{tools.RunCommandName, `{"command":"cat {ws}/etc/passwd"}`, false, `leads through a symlink to "/etc/passwd"`},
		{tools.RunCommandName, `{"command":"cat /workspace/chain/passwd"}`, false, `leads through a symlink to "/etc/passwd"`},
		{tools.RunCommandName, `{"command":"ls up/"}`, false, "leads through a symlink"},
		{tools.RunCommandName, `{"command":"cat out/x"}`, false, "-evil/x"},
		{tools.RunCommandName, `{"command":"cat src/up/envlnk"}`, false, `names ".env" (through a symlink)`},
		{tools.RunCommandName, `{"command":"grep --file=envlnk main.go"}`, false, `names ".env"`},
		{tools.RunCommandName, `{"command":"touch lib/x"}`, false, `leads through a symlink to "/usr/lib/x"`},
		{tools.RunCommandName, `{"command":"cat main.go","dir":"repo"}`, false, `paths.deny`},
		{tools.RunCommandName, `{"command":"cat */passwd"}`, false, `matches a symlink that leads to "/etc`},
		{tools.RunCommandName, `{"command":"cat env*"}`, false, `matches a symlink to ".env"`},
		{tools.RunCommandName, `{"command":"cat src/* > dep/all.go"}`, false, `paths.read_only`},
		{tools.RunTestsName, `{"command":"go test ./etc/..."}`, false, "leads through a symlink"},

		{tools.RunCommandName, `{"command":"cat src/main.go"}`, true, "package app"},
		{tools.RunCommandName, `{"command":"cat main.go","dir":"src"}`, true, "package app"},
		{tools.RunCommandName, `{"command":"cd src && cat main.go"}`, true, "package app"},
		{tools.RunCommandName, `{"command":"cat s*/main.go"}`, true, "package app"},
		{tools.RunCommandName, `{"command":"cat dep/a.go"}`, true, "package a"},
		{tools.RunCommandName, `{"command":"ls lib/"}`, true, ""},
		{tools.RunCommandName, `{"command":"mkdir -p src/pkg/x"}`, true, ""},
		{tools.RunCommandName, `{"command":"go vet ./src/..."}`, true, ""},
		{tools.RunCommandName, `{"command":"echo ` + strings.Repeat("long", 100) + ` main.go/x"}`, true, "longlong"},
	}
	for _, tt := range tests {
		args := strings.ReplaceAll(tt.args, "{ws}", ws.Dir)
		before := log.count()
		res, err := g.Call(context.Background(), view, tools.Call{ID: "l", Name: tt.tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: %v", tt.tool, args, err)
		}
		out := res.Output + "\n" + res.Stdout + res.Stderr
		ran := log.count() > before
		if res.OK != tt.ok || ran != tt.ok || !strings.Contains(out, tt.out) {
			t.Errorf("%s %s: ok=%v ran=%v, want %v with %q: %s", tt.tool, args, res.OK, ran, tt.ok, tt.out, out)
		}
	}
}
