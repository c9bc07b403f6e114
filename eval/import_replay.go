package eval

import (
	"fmt"

	"github.com/goccy/go-yaml"
)

// The reference replay's script, in the llm.ParseScript format; the
// structs keep the keys in the order a person reads them.
type (
	replayScript struct {
		Roles replayRoles `yaml:"roles"`
	}
	replayRoles struct {
		Planner      []replayReply `yaml:"planner"`
		TestDesigner []replayReply `yaml:"test_designer"`
		Worker       []replayReply `yaml:"worker"`
	}
	replayReply struct {
		Content   string       `yaml:"content,omitempty"`
		Output    any          `yaml:"output,omitempty"`
		ToolCalls []replayCall `yaml:"tool_calls,omitempty"`
		Usage     replayUsage  `yaml:"usage"`
	}
	replayCall struct {
		Name      string         `yaml:"name"`
		Arguments map[string]any `yaml:"arguments"`
	}
	replayUsage struct {
		PromptTokens     int `yaml:"prompt_tokens"`
		CompletionTokens int `yaml:"completion_tokens"`
	}
)

// referenceReplay is a replay in which the Planner plans one step, the
// Test Designer checks that the entry point exists, and the Worker writes
// the task's reference solution, runs the tests and finishes: a run of it
// proves the imported task's hidden tests pass on its reference.
func referenceReplay(t importedTask) ([]byte, error) {
	const testCommand = "python3 -m unittest discover -s tests -v"
	file := importModule + ".py"
	tests := fmt.Sprintf("import unittest\n\nimport %s\n\n\nclass EntryPointTest(unittest.TestCase):\n    def test_entry_point(self):\n        self.assertTrue(callable(getattr(%s, %q, None)))\n",
		importModule, importModule, t.entry)
	tokens := func(s string) int { return len(s)/4 + 1 }
	s := replayScript{Roles: replayRoles{
		Planner: []replayReply{{
			Output: map[string]any{
				"steps": []map[string]any{{
					"title": t.entry, "description": fmt.Sprintf("Write %s with %s as the goal describes.", file, t.entry),
					"files": []string{file}, "expected": "the behaviour the goal describes", "acceptance": testCommand + " passes",
				}},
				"risks": []string{"Edge cases the goal names."}, "test_command": testCommand, "cli": []string{}, "tests_dir": "tests",
			},
			Usage: replayUsage{PromptTokens: 400 + tokens(t.goal), CompletionTokens: 90},
		}},
		TestDesigner: []replayReply{{
			Output: map[string]any{
				"notes": "The entry point the goal names exists.",
				"files": []map[string]any{{"path": "tests/test_" + importModule + ".py", "content": tests}},
			},
			Usage: replayUsage{PromptTokens: 400 + tokens(t.goal), CompletionTokens: tokens(tests)},
		}},
		Worker: []replayReply{
			{
				Content: "Writing the reference solution.",
				ToolCalls: []replayCall{
					{Name: "write_file", Arguments: map[string]any{"path": file, "content": t.reference}},
					{Name: "run_tests", Arguments: map[string]any{"command": testCommand}},
				},
				Usage: replayUsage{PromptTokens: 600 + tokens(t.goal), CompletionTokens: tokens(t.reference)},
			},
			{
				ToolCalls: []replayCall{{Name: "finish_step", Arguments: map[string]any{"note": "Implemented as planned."}}},
				Usage:     replayUsage{PromptTokens: 900 + tokens(t.goal), CompletionTokens: 22},
			},
		},
	}}
	b, err := yaml.MarshalWithOptions(s, yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, err
	}
	return append([]byte("# Reference replay written by trio eval import: the Worker writes the task's\n# reference solution (llm.ParseScript format).\n"), b...), nil
}
