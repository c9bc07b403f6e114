package main

import (
	"github.com/spf13/cobra"
)

func newEvalReportCmd(g *globals, io stdio) *cobra.Command {
	return &cobra.Command{Use: "report OUT", Short: "Write an eval's results as one HTML page", Hidden: true}
}
