// Package policy reads Trio's policy file and decides, for every action a
// tool would take, whether it is allowed, needs a person's confirmation
// (ask) or is denied — always with the rule that matched, quoted as written
// (`commands.ask: "go get *" (policy.yaml:14)`), and a reason a person can
// read.
//
// It owns the policy file format (YAML, version 1; see docs/policy.md for
// the complete reference), command-line parsing (ParseCommand, POSIX sh
// syntax via mvdan.cc/sh), rule matching for commands, workspace paths and
// tool names, and the program specs: what each program the policy knows
// accepts — options, which take a value, what each value and operand is
// (read, written, a script, inline code, a command to run), subcommands,
// the environment variables safe for it, what is forbidden outright — as
// data in specs/*.yaml (embedded) or a policy file's programs key, with
// examples checked when a spec loads.
//
// A small engine (engine.go) parses an argv against its spec the way the
// program's own parser would; an allow rule matches only argv the spec
// accepts. judge.go then applies the policy to what the parse found:
// paths.deny to every read (pathspecs, find's name predicates, grep
// --include), paths.read_only to every write, the workspace to both;
// wrappers (env, timeout, xargs, find -exec, sh -c, ...) are judged as what
// they run; variables pass only when a spec names them. Programs without a
// spec are matched by their patterns with every path-like word confined.
//
// It must not touch the file system (except Load reading the policy file)
// or run anything: it compares cleaned strings only. Where the workspace's
// symlinks lead it learns from its caller (Scope.Links, answered by package
// tools; SystemLinks for read-only folders); what a program does once
// started is the sandbox's concern. It does not turn Ask into Deny for
// unattended runs either; Unattended tells the caller (the gate in package
// tools) to do so.
//
// A Policy is immutable and safe for concurrent use; WithReadOnly and
// WithUnattended return changed copies. The built-in specs are compiled
// once and shared.
package policy
