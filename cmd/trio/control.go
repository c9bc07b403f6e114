package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/trioagent/trio/agent"
	"github.com/trioagent/trio/cmd/trio/config"
	"github.com/trioagent/trio/tools"
)

// workspaceConfig is the configuration file a command started in a
// folder loads from there (loadConfig): in a workspace, the Worker's code
// may write it, so every session pins it (agent.WithWorkspaceControlFiles).
const workspaceConfig = "trio.yaml"

// controlFiles are the files this command loads as configuration or runs
// on the host: the configuration file (./trio.yaml when none was loaded,
// since a later session would load it), the workspace's trio.yaml when
// the workspace is known, the policy file, the files the hook commands
// name (through $CLAUDE_PROJECT_DIR too, which is ws when the workspace
// is known), the .mcp.json that mcp_json imports, and the files of MCP
// servers started on the host.
func controlFiles(cfg *config.File, polPath, ws string) []string {
	cfgPath := cfg.Path
	if cfgPath == "" {
		cfgPath = workspaceConfig
	}
	files := []string{abs(cfgPath)}
	if own := filepath.Join(ws, workspaceConfig); ws != "" && own != files[0] {
		// What a later command started in the workspace would load.
		files = append(files, own)
	}
	if polPath != "" {
		files = append(files, abs(polPath))
	}
	if cfg.MCPJSON != "" {
		// Its servers are started: it is configuration like this file.
		files = append(files, abs(cfg.Resolve(cfg.MCPJSON)))
	}
	dir := abs(configDir(cfg))
	for _, h := range hookCommands(cfg.Hooks) {
		if ws != "" {
			// A script named through $CLAUDE_PROJECT_DIR (the workspace) too.
			files = append(files, tools.ProjectCommandFiles(dir, h.Command, ws)...)
		} else {
			files = append(files, tools.CommandFiles(dir, h.Command)...)
		}
	}
	for _, name := range cfg.MCP.ServerNames() {
		if s := cfg.MCP.Servers[name]; s.Host && s.Command != "" {
			files = append(files, tools.NamedFiles(dir, append([]string{s.Command}, s.Args...))...)
		}
	}
	return files
}

// pinControl pins each control file against the workspace that holds it:
// ws, the session's own ("" for a new folder, which holds none), else the
// nearest folder holding it that an earlier session pinned (a trio.yaml
// in last night's workspace may be the Worker's, whichever folder this
// session builds in, and whatever command loads it). It runs before
// anything the files name is loaded or started; a file changed since the
// last session there stops the command (exit 3) unless the person passed
// --trust-config.
func pinControl(ws string, files []string, trust bool, prog *progress) error {
	byWS := map[string][]string{}
	for _, f := range files {
		owner := ws
		if _, in := tools.RelInside(ws, f); ws == "" || !in {
			owner, _ = agent.PinnedWorkspace(f)
		}
		if owner != "" {
			byWS[owner] = append(byWS[owner], f)
		}
	}
	for _, owner := range slices.Sorted(maps.Keys(byWS)) {
		pinned, err := agent.PinControlFiles(owner, byWS[owner], trust)
		var ce *agent.ControlChangedError
		switch {
		case errors.As(err, &ce):
			return configError(fmt.Errorf("%w\n  Check the file; if the change is yours, run again with --trust-config", err))
		case err != nil:
			return configError(err)
		}
		if trust && len(pinned) > 0 {
			prog.printf("trio: --trust-config: pinned the control files in the workspace %s as they are now\n", owner)
		}
	}
	return nil
}

// pinWorkspace is the workspace a session will use, when it is known
// before the run starts: --workspace, else the policy's, else "" (a new
// folder in the run folder).
func pinWorkspace(f *runFlags, policyWS string) string {
	switch {
	case f.workspace != "":
		return abs(f.workspace)
	case policyWS != "" && policyWS != ".":
		return abs(policyWS)
	}
	return ""
}

// trustFlag adds --trust-config.
func (f *runFlags) trustFlag(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.trust, "trust-config", false, "accept control files in the workspace (trio.yaml, the policy, hook scripts) that changed since the last session there, and pin them as they are now")
}
