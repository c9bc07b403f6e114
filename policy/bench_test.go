package policy

import "testing"

func BenchmarkCheckCommand(b *testing.B) {
	p := loadTest(b)
	sp := shellOn(b)
	cases := []struct {
		name string
		p    *Policy
		cmd  Command
	}{
		{"go-test", p, Command{Argv: []string{"go", "test", "./..."}}},
		{"argv-allow", p, Command{Argv: []string{"go", "test", "-run", "TestX", "./..."}}},
		{"argv-default-deny", p, Command{Argv: []string{"make", "all", "-j4"}}},
		{"wrapper", p, Command{Argv: []string{"timeout", "60", "env", "GOOS=linux", "go", "build", "./..."}}},
		{"wrapped-test", p, Command{Argv: []string{"timeout", "60", "env", "GOOS=linux", "go", "test", "-run", "TestX", "./pkg/..."}}},
		{"paths", p, Command{Argv: []string{"cat", "/workspace/a.go", "/usr/include/x.h", "b/../c.go"}}},
		{"shell-line", sp, Command{Line: "go vet ./... && go test ./... 2>&1 | tail -n 20", Shell: true}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.p.CheckCommand(c.cmd, testScope)
			}
		})
	}
}

func BenchmarkParseCommand(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCommand("go test -run 'TestA|TestB' ./..."); err != nil {
			b.Fatal(err)
		}
	}
}
