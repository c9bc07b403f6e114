package agent

import (
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/trioagent/trio/critic"
)

var (
	//go:embed prompts/worker.md
	workerPrompt string
	//go:embed prompts/goal.md
	goalText string
	//go:embed prompts/step.md
	stepText string
	//go:embed prompts/repair.md
	repairText string
	//go:embed prompts/analysis_reminder.md
	analysisReminder string
	//go:embed prompts/nudge.md
	nudge string
)

// repairAdvice holds a repair paragraph per failure kind
// (prompts/repair/<kind>.md), added to the repair prompt for the kind of
// the most fundamental failure.
//
//go:embed prompts/repair/*.md
var repairAdvice embed.FS

// adviceFor returns the repair paragraph for the first failure's kind, or
// "" when no file speaks to it.
func adviceFor(f critic.Findings) string {
	if len(f.Failures) == 0 {
		return ""
	}
	b, err := repairAdvice.ReadFile("prompts/repair/" + string(f.Failures[0].Kind) + ".md")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

var funcs = template.FuncMap{"join": strings.Join}

var (
	goalTmpl   = template.Must(template.New("goal").Funcs(funcs).Parse(goalText))
	stepTmpl   = template.Must(template.New("step").Funcs(funcs).Parse(stepText))
	repairTmpl = template.Must(template.New("repair").Funcs(funcs).Parse(repairText))
)

func render(t *template.Template, data any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("agent: prompt %s: %w", t.Name(), err)
	}
	return strings.TrimSpace(b.String()), nil
}
