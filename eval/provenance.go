package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/trioagent/trio/agent"
)

// NewDocument is text with its SHA-256.
func NewDocument(path, text string) Document {
	sum := sha256.Sum256([]byte(text))
	return Document{Path: path, SHA256: hex.EncodeToString(sum[:]), Text: text}
}

// BuildInfo is Trio's version from the binary's build info: the module
// version (or "(devel)") and the VCS revision, time and modified flag.
func BuildInfo() Build {
	b := Build{Version: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// SuiteHash fingerprints a suite's tasks: their ids and content hashes, in
// suite order.
func SuiteHash(s *Suite) string {
	h := sha256.New()
	for _, t := range s.Tasks {
		fmt.Fprintf(h, "%s\x00%s\x00", t.ID, t.Hash)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// provenanceOf completes the caller's provenance with what the eval knows
// and computes the configuration hash.
func (e *Evaluator) provenanceOf(s *Suite, tasks []Task, sc agent.SandboxConfig, started time.Time) Provenance {
	p := e.cfg.provenance
	p.Roles = maps.Clone(p.Roles)
	if p.ModelSource == "" {
		p.ModelSource = "unnamed"
	}
	if p.Policy.SHA256 == "" {
		// Only the name is known here: the caller gives the file's text.
		p.Policy = NewDocument("", fmt.Sprintf("policy %s (unattended %v)", e.cfg.policy.Name(), e.cfg.policy.Unattended()))
	}
	if p.Config.SHA256 == "" {
		p.Config = NewDocument("", "")
	}
	p.Budgets = e.cfg.budgets
	p.Prices = maps.Clone(e.cfg.prices)
	for model, price := range e.cfg.modelPrices {
		if p.Prices == nil {
			p.Prices = map[string]Price{}
		}
		p.Prices["model "+model] = price
	}
	p.Sandbox = SandboxProvenance{Kind: sc.Kind, Isolated: sc.Kind != agent.SandboxLocal}
	if p.Trio.Version == "" {
		p.Trio = BuildInfo()
	}
	p.Suite, p.SuiteHash = s.Name, SuiteHash(s)
	p.Tasks = nil
	for _, t := range tasks {
		p.Tasks = append(p.Tasks, t.ID)
	}
	p.Samples, p.Seed, p.Started, p.Finished = e.cfg.samples, e.cfg.seed, started, time.Time{}
	p.ConfigHash = ConfigHash(p)
	return p
}

// ConfigHash fingerprints what decides an eval's results: the model
// source, the models, providers, hosts and reasoning of the roles, the
// temperature and reply cap, the effective configuration and policy, the
// budgets and the sandbox kind. Prices, samples, the seed, the task
// selection, Trio's build and the times do not change a run's outcome and
// are left out; a task's own content is checked by its hash.
func ConfigHash(p Provenance) string {
	key := struct {
		ModelSource string                    `json:"model_source"`
		Roles       map[string]RoleProvenance `json:"roles"`
		Temperature *float64                  `json:"temperature"`
		MaxTokens   int                       `json:"max_tokens"`
		Config      string                    `json:"config"`
		Policy      string                    `json:"policy"`
		Budgets     agent.Budgets             `json:"budgets"`
		Sandbox     string                    `json:"sandbox"`
	}{p.ModelSource, p.Roles, p.Temperature, p.MaxTokens, p.Config.SHA256, p.Policy.SHA256, p.Budgets, p.Sandbox.Kind}
	b, _ := json.Marshal(key) // map keys are sorted: the encoding is stable
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// writeProvenance keeps p in out/provenance/<hash>.json.
func writeProvenance(out string, p Provenance) error {
	dir := filepath.Join(out, ProvenanceDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("eval: encode provenance: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, p.ConfigHash+".json"), append(b, '\n'))
}

// unpriced lists the roles of r that made calls without a price.
func unpriced(roles map[string]RoleMetrics) []string {
	var out []string
	for _, role := range slices.Sorted(maps.Keys(roles)) {
		if u := roles[role]; u.Calls > 0 && !u.Priced {
			out = append(out, role)
		}
	}
	return out
}
