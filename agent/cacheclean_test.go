package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/sandbox/containerd"
	"github.com/trioagent/trio/sandbox/userns"
)

// plantTest is a test file the Worker writes: on its first run (the
// Worker's go test) its TestMain leaves a file in the build cache, as code
// that poisons cached build results would; later runs leave nothing.
const plantTest = `package calc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMain(m *testing.M) {
	if _, err := os.Stat("planted.txt"); err != nil {
		os.WriteFile(filepath.Join(os.Getenv("GOCACHE"), "planted"), []byte("forged"), 0o644)
		os.WriteFile("planted.txt", []byte("done"), 0o644)
	}
	os.Exit(m.Run())
}
`

// cacheCheck is one of the Critic's acceptance tests: it fails when the
// check's build cache holds what the Worker's code planted there.
const cacheCheck = `package acceptance

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCacheIsTheCriticsOwn(t *testing.T) {
	if b, err := os.ReadFile(filepath.Join(os.Getenv("GOCACHE"), "planted")); err == nil {
		t.Fatalf("the Critic's check runs with a build cache the Worker's code wrote: planted %q", b)
	}
}
`

// In each isolating kind, what the Worker's code writes into the build
// cache is gone when the Critic's checks run (the sandbox resets before
// them), so the Worker cannot prepare the results they build and cache.
// The run completes only if the Critic's test found no planted file. The
// Worker runs its tests through a shell, an ordinary command: a go test of
// its own in userns would be a trusted build, whose test binaries can
// write neither the workspace nor a build cache (userns tests that).
func TestCriticCacheIsNotTheWorkers(t *testing.T) {
	t.Parallel()
	eachIsolatedKind(t, func(t *testing.T, kind string) {
		e := newEnv(t)
		plan := text(mustJSON(map[string]any{
			"steps": []map[string]any{{
				"title": "calc package", "description": "Write go.mod and calc.go with Add, and a unit test.",
				"files": []string{"go.mod", "calc.go", "plant_test.go", "planted.txt"}, "expected": "calc.Add adds", "acceptance": "go test passes",
			}},
			"risks": []string{}, "test_command": "go test ./...", "cli": []string{}, "tests_dir": "acceptance",
		}))
		m := newFake().add(agent.RolePlanner, plan).
			add(agent.RoleTestDesigner, suite(map[string]string{"acceptance/calc_test.go": calcTest, "acceptance/cache_test.go": cacheCheck})).
			add(agent.RoleWorker, calls("", write("go.mod", goMod), write("calc.go", calcGood), write("plant_test.go", plantTest),
				call{"run_tests", map[string]string{"command": "sh -c 'go test ./...'"}}, finish("done")))
		sc := agent.WithSandboxConfig(agent.SandboxConfig{Kind: kind})
		rep := run(t, m, nil, e.folderOpts(sc, agent.WithRunID("cache-clean-"+kind))...)
		if _, err := os.Stat(filepath.Join(e.ws, "planted.txt")); err != nil {
			t.Fatalf("the Worker's go test did not run its TestMain: %v", err)
		}
		if rep.Reason != agent.StopCompleted {
			trace, _ := os.ReadFile(filepath.Join(e.runs, "cache-clean-"+kind, "trace.jsonl"))
			t.Fatalf("%s (%s): the Critic's check failed; the trace:\n%s", rep.Reason, rep.Detail, trace)
		}
	})
}

// eachIsolatedKind runs test as a parallel subtest for each isolating
// sandbox kind; a kind this machine cannot run fails under CI=true and is
// skipped otherwise.
func eachIsolatedKind(t *testing.T, test func(t *testing.T, kind string)) {
	kinds := map[string]func() error{
		agent.SandboxUserns:     func() error { return userns.Available(context.Background(), "") },
		agent.SandboxContainerd: func() error { return containerd.Available(context.Background(), "") },
	}
	for kind, available := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if err := available(); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true and the %s sandbox is unavailable: %v", kind, err)
				}
				t.Skipf("%s sandbox unavailable: %v", kind, err)
			}
			test(t, kind)
		})
	}
}
