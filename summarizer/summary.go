package summarizer

import (
	_ "embed"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/trioagent/trio/llm"
)

// Summary is the structured record of earlier work that replaces folded
// turns. Every field is required in the model's reply (strict schema); lists
// may be empty.
type Summary struct {
	Progress         string   `json:"progress" jsonschema_description:"Where the work stands now, in two or three sentences."`
	CompletedSteps   []string `json:"completed_steps" jsonschema_description:"Plan steps finished and verified, one per item."`
	FilesChanged     []string `json:"files_changed" jsonschema_description:"Workspace-relative paths created or modified, each with a few words on what changed."`
	UnresolvedErrors []string `json:"unresolved_errors" jsonschema_description:"Errors still open, each copied verbatim: the exact error line or failing test name. Never paraphrase."`
	Decisions        []string `json:"decisions" jsonschema_description:"Decisions taken and why (libraries, layouts, approaches tried and rejected)."`
	NextSteps        []string `json:"next_steps" jsonschema_description:"What remains to do, in order."`
}

var (
	//go:embed prompts/summarizer.md
	summarizerPrompt string
	//go:embed prompts/reference.md
	referenceHeader string
	//go:embed prompts/wrapup.md
	wrapUpNote string
)

// WrapUpNote is the note the agent appends (as a user message, through
// Window.Append) once 80 % of the run's token budget is spent.
func WrapUpNote() string { return strings.TrimSpace(wrapUpNote) }

// ReferenceHeader is the first line of the message that carries the summary
// and the tracked errors; it tells the model the message is reference
// material, not a new instruction.
func ReferenceHeader() string { return firstLine(referenceHeader) }

var schemaOnce = sync.OnceValue(func() *llm.OutputSchema {
	return llm.SchemaOf[Summary]("summary", "Structured summary of earlier agent work.")
})

// SummarySchema is the output schema the summarizer model is asked for
// (llm.SchemaOf of Summary: strict, every field required).
func SummarySchema() *llm.OutputSchema {
	s := *schemaOnce()
	s.Schema = slices.Clone(s.Schema)
	return &s
}

// errEmptySummary marks a reply with no content or only empty fields.
var errEmptySummary = errors.New("summary is empty: every field is blank")

// Validate rejects a summary with nothing in it; llm.DecodeOutput calls it.
func (s Summary) Validate() error {
	if s.empty() {
		return errEmptySummary
	}
	return nil
}

// DecodeSummary parses a summarizer reply strictly (llm.DecodeOutput): one
// JSON object, every field present, no unknown field, not empty. The error
// names the field that was wrong.
func DecodeSummary(content string) (Summary, error) {
	return llm.DecodeOutput[Summary](content)
}

func (s Summary) empty() bool {
	return strings.TrimSpace(s.Progress) == "" && len(s.CompletedSteps) == 0 && len(s.FilesChanged) == 0 &&
		len(s.UnresolvedErrors) == 0 && len(s.Decisions) == 0 && len(s.NextSteps) == 0
}

// sameProgress reports whether two summaries record the same state of work
// (the fields that change when work moves on).
func (s Summary) sameProgress(o Summary) bool {
	return strings.TrimSpace(s.Progress) == strings.TrimSpace(o.Progress) &&
		slices.Equal(s.CompletedSteps, o.CompletedSteps) && slices.Equal(s.FilesChanged, o.FilesChanged) &&
		slices.Equal(s.NextSteps, o.NextSteps)
}

// renderBody writes the model's part of the summary as Markdown. Errors are
// rendered separately by the window (tracked, verbatim); modelErrors are the
// extra ones the model reported that the window did not track.
func (s Summary) renderBody(b *strings.Builder) {
	if p := strings.TrimSpace(s.Progress); p != "" {
		b.WriteString("\n## Progress\n")
		b.WriteString(p)
		b.WriteString("\n")
	}
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		b.WriteString("\n## ")
		b.WriteString(title)
		b.WriteString("\n")
		for _, it := range items {
			b.WriteString("- ")
			b.WriteString(it)
			b.WriteString("\n")
		}
	}
	list("Completed steps", s.CompletedSteps)
	list("Files changed", s.FilesChanged)
	list("Decisions", s.Decisions)
	list("Next steps (as recorded earlier; the plan and the latest messages take precedence)", s.NextSteps)
}

// renderErrors writes error texts verbatim, each on "- " followed by the
// exact text (continuation lines untouched, so the text stays a substring).
func renderErrors(b *strings.Builder, errs []string) {
	if len(errs) == 0 {
		return
	}
	b.WriteString("\n## Unresolved errors (verbatim)\n")
	for _, e := range errs {
		b.WriteString("- ")
		b.WriteString(e)
		b.WriteString("\n")
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
