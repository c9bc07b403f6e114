// Package configs holds Trio's example configuration and policy files. It
// has no code: each file here is loaded and exercised by a test in this
// folder, so an example that stops parsing or stops meaning what its
// comments say fails the build. The policy file format is described in
// docs/policy.md.
package configs
