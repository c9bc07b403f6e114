package main

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/policy"
)

func newPolicyCmd(io stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check a policy file, or explain what it decides for a command",
		Long: `Policy files decide every action of a run: which commands run, which
workspace paths may be read or written, the limits of commands and how long
a confirmation waits. They are described in docs/policy.md; configs/ holds
three ready-made ones (strict, unattended, interactive).`,
	}
	cmd.AddCommand(newPolicyCheckCmd(io), newPolicyExplainCmd(io))
	return cmd
}

func newPolicyCheckCmd(io stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a policy file; every problem names its line (exit 3 when invalid)",
		Long: `Check validates a policy file and prints what it sets: mode, workspace,
shell mode, limits and the confirmation timeout. Every problem names the
file and line. The format is described in docs/policy.md.

Exit codes: 0 valid, 3 invalid (or unreadable).`,
		Example: `  trio policy check configs/policy.interactive.yaml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := policy.Load(args[0])
			if err != nil {
				return configError(err)
			}
			l := p.Limits()
			mode := "interactive (a run asks on the terminal; without one, ask means deny)"
			if p.Unattended() {
				mode = "unattended (ask means deny)"
			}
			shell := "off (pipes, ;, &&, redirections refused)"
			if p.Shell() {
				shell = "on (each simple command judged on its own)"
			}
			fmt.Fprintf(io.out, "%s: ok\n", args[0])
			fmt.Fprintf(io.out, "  mode:      %s\n", mode)
			ws := p.Workspace()
			if ws == "" || ws == "." {
				ws = ". (trio run builds in runs/<run-id>/workspace unless --workspace is given)"
			}
			fmt.Fprintf(io.out, "  workspace: %s\n", ws)
			fmt.Fprintf(io.out, "  shell:     %s\n", shell)
			cpus := "no quota"
			if l.CPUs > 0 {
				cpus = strconv.FormatFloat(l.CPUs, 'g', -1, 64)
			}
			fmt.Fprintf(io.out, "  limits:    timeout %s, memory %s, cpus %s, pids %d, output %s, network %s, disk %s, file %s\n",
				l.Timeout, bytesText(l.Memory), cpus, l.Pids, bytesText(l.Output), onOff(l.Network), bytesText(l.Disk), bytesText(l.File))
			fmt.Fprintf(io.out, "  confirm:   no answer in %s = no\n", p.ConfirmTimeout())
			return nil
		},
	}
}

func newPolicyExplainCmd(io stdio) *cobra.Command {
	var file, workspace, path, kind string
	var write bool
	cmd := &cobra.Command{
		Use:   "explain [--policy P] -- COMMAND [ARG...]",
		Short: "Print the decision for a command or a file path, the rule that matched and why",
		Long: `Explain judges one command line as the gate would, and prints the decision
(allow, ask or deny), the rule that matched and the reason. Give the command
after --, as words (trio policy explain -- rm -rf build) or as one quoted line,
which may hold shell syntax (trio policy explain -- 'go test ./... | tail').
Paths in the command are judged against --workspace (default: the current
folder; /workspace means the same folder, as inside the sandbox).

--sandbox says where the command would run. In a kind that enforces the
policy's path, network and limit rules (containerd, userns, landlock), an
allowed program runs with any arguments and shell forms: only which
programs run is judged, and deny and ask rules still apply. With local
(the default), which enforces nothing, every argument is judged too.

With --path FILE instead of a command, explain judges a file tool's access
to FILE, a workspace-relative path: a read (read_file, list_files,
search_files), or with --write a write (write_file, edit_file).

Exit codes: 0 allow, 10 ask, 11 deny, 3 bad policy file or usage. With an
unattended policy, ask is still 10 and the output notes that a run denies it.`,
		Example: `  trio policy explain --policy configs/policy.interactive.yaml -- rm -rf build
  trio policy explain --policy configs/policy.interactive.yaml -- 'go test ./... | tail -5'
  trio policy explain -- python3 -m pytest
  trio policy explain --policy configs/policy.interactive.yaml --path .env
  trio policy explain --policy configs/policy.interactive.yaml --path go.mod --write`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch byPath := cmd.Flags().Changed("path"); {
			case byPath && path == "":
				return configError(errors.New("--path: empty path: give a workspace-relative file path"))
			case byPath && len(args) > 0:
				return configError(errors.New("give a command after -- or --path FILE, not both"))
			case write && !byPath:
				return configError(errors.New("--write goes with --path FILE (a command's writes are judged from the command itself)"))
			case !slices.Contains([]string{"local", "containerd", "userns", "landlock"}, kind):
				return configError(fmt.Errorf("--sandbox %q: want local, containerd, userns or landlock", kind))
			case !byPath && len(args) == 0:
				return configError(errors.New("no command to explain: give it after --, as in trio policy explain -- rm -rf build (or a file path with --path FILE)"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p := policy.Default()
			name := "built-in strict policy"
			if file != "" {
				var err error
				if p, err = policy.Load(file); err != nil {
					return configError(err)
				}
				name = file
			}
			fmt.Fprintf(io.out, "policy:   %s\n", name)
			var d policy.Decision
			if path != "" {
				access, what := policy.Read, "read"
				if write {
					access, what = policy.Write, "write"
				}
				d = p.CheckPath(path, access)
				fmt.Fprintf(io.out, "path:     %s (%s)\n", path, what)
			} else {
				d = explainCommand(io, p, args, workspace, kind != "local")
				if kind != "local" {
					fmt.Fprintf(io.out, "sandbox:  %s (it holds paths, network and limits: which programs run is judged, not their arguments)\n", kind)
				}
			}
			return explainDecision(io, p, d)
		},
	}
	cmd.Flags().StringVar(&file, "policy", "", "policy file (default: the built-in strict policy)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "the workspace paths are judged against (default: the current folder)")
	cmd.Flags().StringVar(&path, "path", "", "explain a file tool's access to this workspace-relative path instead of a command")
	cmd.Flags().StringVar(&kind, "sandbox", "local", "the sandbox kind the command would run in: local, containerd, userns or landlock")
	cmd.Flags().BoolVar(&write, "write", false, "with --path: judge a write (write_file, edit_file) instead of a read")
	return cmd
}

// explainCommand judges the command given as args, prints it and returns
// the decision.
func explainCommand(io stdio, p *policy.Policy, args []string, workspace string, enforced bool) policy.Decision {
	line := args[0]
	if len(args) > 1 {
		line = shellJoin(args)
	}
	c, err := policy.ParseCommand(line)
	if err != nil && !errors.Is(err, policy.ErrEmptyCommand) {
		// A line that does not parse is still judged (rule syntax-error).
		c = policy.Command{Line: line}
	}
	ws := workspace
	if ws == "" {
		ws = "."
	}
	d := p.CheckCommand(c, policy.Scope{Workspace: abs(ws), Aliases: []string{"/workspace"}, Enforced: enforced})
	if len(c.Argv) > 0 && !c.Shell {
		fmt.Fprintf(io.out, "command:  %s\n", quoteArgv(c.Argv))
	} else {
		fmt.Fprintf(io.out, "command:  %s (shell line)\n", line)
	}
	return d
}

// explainDecision prints d and returns the exit error of its verdict.
func explainDecision(io stdio, p *policy.Policy, d policy.Decision) error {
	fmt.Fprintf(io.out, "decision: %s\n", d.Verdict)
	fmt.Fprintf(io.out, "rule:     %s\n", d.Rule)
	fmt.Fprintf(io.out, "reason:   %s\n", d.Reason)
	switch d.Verdict {
	case policy.Allow:
		return nil
	case policy.Ask:
		if p.Unattended() {
			fmt.Fprintln(io.out, "note:     the policy is unattended, so a run denies this instead of asking")
		} else {
			fmt.Fprintln(io.out, "note:     a run asks you on the terminal (y once, n, a always); without a terminal it is denied")
		}
		return &exitError{code: exitExplainAsk}
	}
	return &exitError{code: exitExplainDeny}
}

// bytesText is a byte count in the policy file's units (64KiB, 1GiB).
func bytesText(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// shellJoin quotes words so that ParseCommand gives them back as argv.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`|&;<>()*?[]{}~#!") {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// version is set at link time (-ldflags "-X main.version=v1.2.3"); else the
// module version or VCS revision from the build info.
var version = ""

func newVersionCmd(io stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print trio's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			v, goVersion := version, ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVersion = bi.GoVersion
				if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					v = bi.Main.Version
				}
				for _, s := range bi.Settings {
					if v == "" && s.Key == "vcs.revision" && len(s.Value) >= 12 {
						v = "dev-" + s.Value[:12]
					}
				}
			}
			if v == "" {
				v = "dev"
			}
			fmt.Fprintf(io.out, "trio %s (%s)\n", v, goVersion)
		},
	}
}
