package planner

import (
	"errors"
	"slices"
	"testing"
)

func validPlan() Plan {
	return Plan{
		Goal: "a greeting CLI",
		Steps: []Step{
			{ID: 1, Title: "module", Description: "create the module", Files: []string{"go.mod"}, Expected: "go.mod exists", Acceptance: "go build ./... succeeds"},
			{ID: 2, Title: "code", Description: "write main", Files: []string{"main.go", "main_test.go", "go.mod"}, Expected: "prints hello", Acceptance: "go test ./... passes"},
		},
		TestCommand: "go test ./...",
		CLI:         []string{"go", "run", "."},
		TestsDir:    "acceptance",
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(p *Plan)
		fields []string // every problem's field, in order; nil means valid
	}{
		{"valid", func(p *Plan) {}, nil},
		{"default tests dir", func(p *Plan) { p.TestsDir = "" }, nil},
		{"no goal", func(p *Plan) { p.Goal = " " }, []string{"goal"}},
		{"no steps", func(p *Plan) { p.Steps = nil }, []string{"steps"}},
		{"empty description", func(p *Plan) { p.Steps[1].Description = "\n" }, []string{"steps[1].description"}},
		{"empty expected and acceptance", func(p *Plan) { p.Steps[0].Expected, p.Steps[0].Acceptance = "", "" },
			[]string{"steps[0].expected", "steps[0].acceptance"}},
		{"bad and duplicate ids", func(p *Plan) { p.Steps[0].ID = 0; p.Steps = append(p.Steps, p.Steps[1]) },
			[]string{"steps[0].id", "steps[2].id"}},
		{"absolute file", func(p *Plan) { p.Steps[1].Files[0] = "/etc/passwd" }, []string{"steps[1].files[0]"}},
		{"dotdot file", func(p *Plan) { p.Steps[1].Files[1] = "a/../../x.go" }, []string{"steps[1].files[1]"}},
		{"drive letter", func(p *Plan) { p.Steps[0].Files[0] = `C:\x.go` }, []string{"steps[0].files[0]"}},
		{"backslash", func(p *Plan) { p.Steps[0].Files[0] = `cmd\x.go` }, []string{"steps[0].files[0]"}},
		{"empty file", func(p *Plan) { p.Steps[0].Files[0] = "" }, []string{"steps[0].files[0]"}},
		{"dot file", func(p *Plan) { p.Steps[0].Files[0] = "./" }, []string{"steps[0].files[0]"}},
		{"duplicate in one step", func(p *Plan) { p.Steps[1].Files[1] = "./main.go" }, []string{"steps[1].files[1]"}},
		{"file in tests dir", func(p *Plan) { p.Steps[1].Files[1] = "acceptance/a_test.go" }, []string{"steps[1].files[1]"}},
		{"file in default tests dir", func(p *Plan) { p.TestsDir = ""; p.Steps[1].Files[1] = "acceptance/x/a_test.go" }, []string{"steps[1].files[1]"}},
		{"similar name is not tests dir", func(p *Plan) { p.Steps[1].Files[1] = "acceptance_helpers.go" }, nil},
		{"empty test command", func(p *Plan) { p.TestCommand = "  " }, []string{"test_command"}},
		{"multi-line test command", func(p *Plan) { p.TestCommand = "go vet ./...\ngo test ./..." }, []string{"test_command"}},
		{"empty cli word", func(p *Plan) { p.CLI = []string{"./app", ""} }, []string{"cli[1]"}},
		{"absolute tests dir", func(p *Plan) { p.TestsDir = "/tmp/acc" }, []string{"tests_dir"}},
		{"escaping tests dir", func(p *Plan) { p.TestsDir = "../acc" }, []string{"tests_dir"}},
		{"tests dir is workspace", func(p *Plan) { p.TestsDir = "./" }, []string{"tests_dir"}},
		{"tests dir is dot", func(p *Plan) { p.TestsDir = " . " }, []string{"tests_dir"}},
		{"tests dir cleans to workspace", func(p *Plan) { p.TestsDir = "acc/.." }, []string{"tests_dir"}},
		{"tests dir dot dot-slash", func(p *Plan) { p.TestsDir = "./." }, []string{"tests_dir"}},
		{"tests dir escapes after a folder", func(p *Plan) { p.TestsDir = "acc/../../x" }, []string{"tests_dir"}},
		{"tests dir with drive letter", func(p *Plan) { p.TestsDir = "C:/acc" }, []string{"tests_dir"}},
		{"tests dir with backslash root", func(p *Plan) { p.TestsDir = `\acc` }, []string{"tests_dir"}},
		{"tests dir is a glob", func(p *Plan) { p.TestsDir = "*" }, []string{"tests_dir"}},
		{"tests dir with glob class", func(p *Plan) { p.TestsDir = "t[a-z]" }, []string{"tests_dir"}},
		{"nested tests dir", func(p *Plan) { p.TestsDir = "tests/acceptance/" }, nil},
		{"everything at once", func(p *Plan) {
			p.Goal = ""
			p.Steps[0].Description = ""
			p.Steps[1].Files[2] = "../go.mod"
			p.TestCommand = ""
		}, []string{"goal", "steps[0].description", "steps[1].files[2]", "test_command"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := validPlan()
			p.Steps = slices.Clone(p.Steps)
			for i := range p.Steps {
				p.Steps[i].Files = slices.Clone(p.Steps[i].Files)
			}
			tt.edit(&p)
			err := p.Validate()
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want *ValidationError", err)
			}
			if !errors.Is(err, ErrInvalidPlan) {
				t.Errorf("error does not wrap ErrInvalidPlan")
			}
			var got []string
			for _, pr := range ve.Problems {
				got = append(got, pr.Field)
				if pr.Message == "" {
					t.Errorf("problem %s has no message", pr.Field)
				}
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("problem fields = %q, want %q (%v)", got, tt.fields, err)
			}
		})
	}
}

func TestPlanHelpers(t *testing.T) {
	t.Parallel()
	p := validPlan()
	p.Steps[1].Files = append(p.Steps[1].Files, "./cmd//x.go")
	if got, want := p.Files(), []string{"go.mod", "main.go", "main_test.go", "cmd/x.go"}; !slices.Equal(got, want) {
		t.Errorf("Files() = %q, want %q", got, want)
	}
	for dir, want := range map[string]string{"": "acceptance", " tests/acc/ ": "tests/acc", "./at": "at"} {
		p.TestsDir = dir
		if got := p.TestsFolder(); got != want {
			t.Errorf("TestsFolder(%q) = %q, want %q", dir, got, want)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	p := validPlan()
	for i := 3; i <= 20; i++ {
		p.Steps = append(p.Steps, Step{ID: i, Description: "d", Files: []string{"pkg/a.go", "pkg/b.go"}, Expected: "e", Acceptance: "a"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
