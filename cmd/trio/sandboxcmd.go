package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/sandbox/containerd"
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
		Short: "Remove the containers and state folders of runs whose trio process died",
		Long: `Prune removes from containerd every container Trio made whose creating
process has died on this host (a run killed with kill -9, a machine that
lost power): its task and any process still in it, its snapshot and its
state folder; then the state folders of such runs that had no container
yet (killed before their first command). A workspace the dead run had lent
to the sandbox user (trio running as root) is given back to its owner.
Containers and folders of live runs and of other hosts are left alone, and
so is a state folder another user could have written. Every trio run on
containerd does the same sweep when it starts; prune does it on its own and
says what it removed.

containerd is found as for trio run: sandbox.containerd.address of
trio.yaml, else $TRIO_CONTAINERD_ADDRESS, else the default socket.

Exit codes: 0 pruned (perhaps nothing), 1 something could not be removed,
3 containerd unreachable or a bad trio.yaml.`,
		Example: `  trio sandbox prune
  trio sandbox prune --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadConfig(g.config)
			if err != nil {
				return err
			}
			cd := sandboxConfig("", f).Containerd
			removed, err := containerd.Prune(cmd.Context(), containerd.Config{Address: cd.Address, Namespace: cd.Namespace, StateDir: cd.StateDir})
			if errors.Is(err, containerd.ErrUnavailable) {
				return configError(err)
			}
			if asJSON {
				if removed == nil {
					removed = []containerd.Leftover{}
				}
				enc := json.NewEncoder(io.out)
				enc.SetIndent("", "  ")
				enc.Encode(removed)
			} else {
				if len(removed) == 0 {
					fmt.Fprintln(io.out, "nothing to prune: no container or state folder of a dead run")
				}
				for _, l := range removed {
					what := l.Container
					if what == "" {
						what = "the state folder " + l.State
					}
					fmt.Fprintf(io.out, "removed %s (run %s, owner %s gone)", what, l.Run, l.Owner)
					if l.Workspace != "" {
						fmt.Fprintf(io.out, "; gave %s back to its owner", l.Workspace)
					}
					fmt.Fprintln(io.out)
				}
			}
			if err != nil {
				return failure(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was removed as JSON")
	return cmd
}
