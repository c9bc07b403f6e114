package agent

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"
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
