// Package policy reads Trio's policy file and decides, for every action a
// tool would take, whether it is allowed, needs a person's confirmation
// (ask) or is denied — always with the rule that matched, quoted as written
// (`commands.ask: "go get *" (policy.yaml:14)`), and a reason a person can
// read.
//
// It owns the policy file format (YAML, version 1; see docs/policy.md for
// the complete reference), command-line parsing (ParseCommand, POSIX sh
// syntax via mvdan.cc/sh), rule matching for commands, workspace paths and
// tool names, the judging of wrappers (env, timeout, xargs, find -exec,
// sh -c, python -c, git -c, npm exec, ...) and of options that make a
// program run another (sort --compress-program, rg --pre, tar -I,
// go -exec, git -p), the confinement of path arguments (with
// paths.read_only applied to what known programs write: rm, mv, cp, sed -i,
// ...; shell globs judged by every path they may expand to), the
// resource limits a policy sets, and the Confirmer interface a person
// answers through.
//
// It must not touch the file system (except Load reading the policy file)
// or run anything: it compares cleaned strings only. Where the workspace's
// symlinks lead it learns from its caller (Scope.Links, answered by package
// tools); what a program does once started is the sandbox's concern. It does not turn
// Ask into Deny for unattended runs either; Unattended tells the caller
// (the gate in package tools) to do so.
//
// A Policy is immutable and safe for concurrent use; WithReadOnly and
// WithUnattended return changed copies.
package policy
