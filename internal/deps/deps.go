// Package deps pins the module's dependencies while the packages that use
// them are written in parallel. It is removed once every import is real.
package deps

import (
	_ "github.com/containerd/containerd/v2/client"
	_ "github.com/containerd/containerd/v2/pkg/cio"
	_ "github.com/containerd/containerd/v2/pkg/namespaces"
	_ "github.com/containerd/containerd/v2/pkg/oci"
	_ "github.com/containerd/errdefs"
	_ "github.com/creack/pty"
	_ "github.com/goccy/go-yaml"
	_ "github.com/invopop/jsonschema"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/openai/openai-go/v3/option"
	_ "github.com/openai/openai-go/v3/packages/param"
	_ "github.com/opencontainers/runtime-spec/specs-go"
	_ "github.com/pkoukk/tiktoken-go"
	_ "github.com/pkoukk/tiktoken-go-loader"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/term"
	_ "mvdan.cc/sh/v3/syntax"
)
