package main

import (
	"github.com/spf13/cobra"
)

func newEvalImportCmd(g *globals, io stdio) *cobra.Command {
	return &cobra.Command{Use: "import FORMAT FILE OUTDIR", Short: "Turn a published task file into a suite", Hidden: true}
}
