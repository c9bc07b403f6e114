package policy_test

import (
	"fmt"

	"github.com/trioagent/trio/policy"
)

func ExampleParse() {
	p, err := policy.Parse("policy.yaml", []byte(`version: 1
mode: interactive
commands:
  allow: ["go test *"]
  ask: ["go get *"]
  deny: ["curl *"]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := policy.Scope{Workspace: "/home/me/project"}
	for _, line := range []string{"go test ./...", "go get example.com/m", "timeout 5 curl x", "go test | tail"} {
		cmd, err := policy.ParseCommand(line)
		if err != nil {
			fmt.Println(err)
			continue
		}
		d := p.CheckCommand(cmd, scope)
		fmt.Printf("%-22s %-5v %s\n", line, d.Verdict, d.Rule)
	}
	// Output:
	// go test ./...          allow commands.allow: "go test *" (policy.yaml:4)
	// go get example.com/m   ask   commands.ask: "go get *" (policy.yaml:5)
	// timeout 5 curl x       deny  commands.deny: "curl *" (policy.yaml:6)
	// go test | tail         deny  shell-disabled
}

func ExampleParse_error() {
	_, err := policy.Parse("policy.yaml", []byte("version: 1\nlimits:\n  memory: lots\n"))
	fmt.Println(err)
	// Output:
	// policy.yaml:3:11: limits.memory: want a size such as 512MiB, 1GiB or 65536, got "lots"
}
