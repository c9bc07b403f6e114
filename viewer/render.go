package viewer

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

var page = template.Must(template.New("page").Parse(pageHTML))

// FileName is the page's name in the run folder.
const FileName = "view.html"

// Render writes the page for d and the tool outputs to w.
func Render(w io.Writer, d *Data, outputs []string) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("viewer: %w", err)
	}
	if outputs == nil {
		outputs = []string{}
	}
	outs, err := json.Marshal(outputs)
	if err != nil {
		return fmt.Errorf("viewer: %w", err)
	}
	// json.Marshal escapes <, > and &, so no "</script>" can end a block
	// early; the blocks are data, never run.
	return page.Execute(w, map[string]any{
		"Title":   "trio run " + d.RunID,
		"CSS":     template.CSS(pageCSS),
		"JS":      template.JS(pageJS),
		"Data":    template.JS(data),
		"Outputs": template.JS(outs),
	})
}

// WriteFile renders the run folder dir into the file out (dir/view.html
// when out is "") and returns its path.
func WriteFile(dir, out string) (string, error) {
	d, outputs, err := Load(dir)
	if err != nil {
		return "", err
	}
	if out == "" {
		out = filepath.Join(dir, FileName)
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("viewer: %w", err)
	}
	if err := Render(f, d, outputs); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("viewer: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("viewer: %w", err)
	}
	return out, nil
}
