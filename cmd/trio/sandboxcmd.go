package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/sandbox"
)

func newSandboxCmd(g *globals, io stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Look after what sandboxes leave behind",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSandboxPruneCmd(g, io))
	return cmd
}

func newSandboxPruneCmd(g *globals, io stdio) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove what the sandboxes of runs whose trio process died left behind",
		Long: `Prune asks every sandbox kind that can leave state on this host what runs
whose trio process has died (a run killed with kill -9, a machine that lost
power) left behind, and removes it:

  containerd  every container Trio made whose creating process died on this
              host: its task and any process still in it, its snapshot and its
              state folder; then the state folders of such runs that had no
              container yet. A workspace the dead run had lent to the sandbox
              user (trio running as root) is given back to its owner.
  userns      this user's state folders in $TMPDIR and the trusted builds'
              folders of the warm cache (the commands died with trio).
  landlock    this user's state folders in $TMPDIR.

Containers and folders of live runs, of other hosts and of other users are
left alone. Every run does the same sweep for its kind when it starts;
prune does it for every kind and says which kinds it looked at, what it
removed, and which kinds it could not look at (containerd not running is not an error: there is
nothing of it to prune then).

containerd is found as for trio run: sandbox.containerd.address of
trio.yaml, else $TRIO_CONTAINERD_ADDRESS, else the default socket.

Exit codes: 0 pruned (perhaps nothing), 1 something could not be removed,
3 a bad trio.yaml.`,
		Example: `  trio sandbox prune
  trio sandbox prune --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			sc := sandboxConfig("", f)
			settings := map[string]any{}
			for _, k := range sandbox.Kinds() {
				sc.Kind = k
				settings[k] = sc.Settings()
			}
			removed, errs := sandbox.Prune(cmd.Context(), settings)
			var failed []error
			var skipped []string
			unreachable := map[string]bool{}
			for _, err := range errs {
				if errors.Is(err, sandbox.ErrUnavailable) {
					skipped = append(skipped, err.Error())
					var se *sandbox.Error
					if errors.As(err, &se) {
						unreachable[se.Kind] = true
					}
				} else {
					failed = append(failed, err)
				}
			}
			// looked are the kinds that can leave state and were swept.
			looked := []string{}
			for _, k := range sandbox.Kinds() {
				if d, _ := sandbox.Lookup(k); d != nil {
					if _, ok := d.(sandbox.Pruner); ok && !unreachable[k] {
						looked = append(looked, k)
					}
				}
			}
			if asJSON {
				out := struct {
					Looked  []string           `json:"looked_at"`
					Removed []sandbox.Leftover `json:"removed"`
					Skipped []string           `json:"skipped,omitempty"`
					Errors  []string           `json:"errors,omitempty"`
				}{Looked: looked, Removed: removed, Skipped: skipped}
				if out.Removed == nil {
					out.Removed = []sandbox.Leftover{}
				}
				for _, e := range failed {
					out.Errors = append(out.Errors, e.Error())
				}
				enc := json.NewEncoder(io.out)
				enc.SetIndent("", "  ")
				enc.Encode(out)
			} else {
				fmt.Fprintln(io.out, "looked at: "+strings.Join(looked, ", "))
				if len(removed) == 0 {
					fmt.Fprintln(io.out, "nothing to prune: no container or state folder of a dead run")
				}
				for _, l := range removed {
					what := "the container " + l.Container
					if l.Container == "" {
						what = "the state folder " + l.State
					}
					fmt.Fprintf(io.out, "%s: removed %s", l.Kind, what)
					if l.Run != "" {
						fmt.Fprintf(io.out, " (run %s)", l.Run)
					}
					fmt.Fprintf(io.out, ", its owner %s gone", l.Owner)
					if l.Workspace != "" {
						fmt.Fprintf(io.out, "; gave %s back to its owner", l.Workspace)
					}
					fmt.Fprintln(io.out)
				}
				for _, s := range skipped {
					fmt.Fprintln(io.out, "not looked at: "+s)
				}
			}
			if len(failed) > 0 {
				return failure(errors.Join(failed...))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was removed, and which kinds could not be looked at, as JSON")
	return cmd
}
