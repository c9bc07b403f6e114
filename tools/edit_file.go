package tools

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// EditFileName is the name of the edit_file tool.
const EditFileName = "edit_file"

// EditFileParams are the arguments of edit_file: old_text (one exact,
// unique snippet to replace), start_line and end_line (a line range to
// replace), or insert_after (a line after which new_text is inserted,
// replacing nothing).
type EditFileParams struct {
	Path      string `json:"path" jsonschema:"description=File to edit (relative to the workspace root)."`
	OldText   string `json:"old_text,omitempty" jsonschema:"description=Exact text to replace; it must occur exactly once in the file. Leave out when using start_line and end_line or insert_after."`
	NewText   string `json:"new_text" jsonschema:"description=Replacement text (may be empty to delete); with insert_after the lines to insert."`
	StartLine int    `json:"start_line,omitempty" jsonschema:"description=First line to replace (1-based) when not using old_text."`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"description=Last line to replace (inclusive) when not using old_text."`
	// InsertAfter is a pointer because 0 (insert at the top) is a value.
	InsertAfter *int `json:"insert_after,omitempty" jsonschema_description:"Insert new_text after this line (1-based; 0 inserts at the top of the file), replacing nothing. Leave out when replacing."`

	rel string
}

// Effects says edit_file writes one path.
func (p *EditFileParams) Effects() []Effect { return []Effect{{Kind: EffectWrite, Path: p.rel}} }

// Validate checks that exactly one way of editing is used.
func (p *EditFileParams) Validate() error {
	byText := p.OldText != ""
	byLines := p.StartLine != 0 || p.EndLine != 0
	insert := p.InsertAfter != nil
	switch {
	case insert && (byText || byLines):
		return argErr("insert_after", "inserts without replacing: give it alone, without old_text or start_line/end_line")
	case insert && *p.InsertAfter < 0:
		return argErr("insert_after", "must be 0 (the top of the file) or a line number, got %d", *p.InsertAfter)
	case insert && p.NewText == "":
		return argErr("new_text", "is empty: nothing to insert")
	case insert:
		return nil
	case byText && byLines:
		return argErr("old_text", "give either old_text or start_line/end_line, not both")
	case !byText && !byLines:
		return argErr("old_text", "required (or give start_line and end_line, or insert_after)")
	case byLines && p.StartLine < 1:
		return argErr("start_line", "must be 1 or more, got %d", p.StartLine)
	case byLines && p.EndLine < p.StartLine:
		return argErr("end_line", "must be at least start_line (%d), got %d", p.StartLine, p.EndLine)
	}
	return nil
}

// EditFile returns the edit_file tool working in ws.
func EditFile(ws *Workspace) Tool {
	return newTyped(EditFileName, description(EditFileName), func(p *EditFileParams) error {
		var err error
		p.rel, err = ws.Rel("path", p.Path)
		return err
	}, ws.editFile)
}

func (ws *Workspace) editFile(ctx context.Context, p EditFileParams) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	f, err := ws.openChecked(p.rel)
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fsResult(p.rel, err), nil
	}
	if st.IsDir() {
		f.Close()
		return errorResult("%s: is a directory", p.rel), nil
	}
	// Matching old_text against a second name of a denied file would show
	// its content a bit at a time ("not found" or "matches once").
	if res, refused, err := ws.hardLinks().refusal(ctx, p.rel, st); err != nil || refused {
		f.Close()
		return res, err
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	text := string(data)
	var (
		out  string
		what string
	)
	if p.InsertAfter != nil {
		var res *Result
		out, what, res = insertLines(p.rel, text, *p.InsertAfter, p.NewText)
		if res != nil {
			return *res, nil
		}
	} else if p.OldText != "" {
		var res *Result
		out, what, res = replaceUnique(p.rel, text, p.OldText, p.NewText)
		if res != nil {
			return *res, nil
		}
	} else {
		var res *Result
		out, what, res = replaceLines(p.rel, text, p.StartLine, p.EndLine, p.NewText)
		if res != nil {
			return *res, nil
		}
	}
	if res, over := ws.overFileLimit(EditFileName, p.rel, len(out)); over {
		return res, nil
	}
	if _, err := ws.writeAtomic(p.rel, []byte(out)); err != nil {
		return fsResult(p.rel, err), nil
	}
	return Result{OK: true, Output: fmt.Sprintf("edited %s: %s", p.rel, what)}, nil
}

// replaceUnique replaces the one occurrence of old in text.
func replaceUnique(rel, text, old, repl string) (string, string, *Result) {
	n := strings.Count(text, old)
	switch {
	case n == 0:
		hint := ""
		if strings.Contains(normalizeSpace(text), normalizeSpace(old)) {
			hint = " (it matches if whitespace is ignored: copy the exact indentation and line breaks)"
		}
		r := errorResult("%s: old_text not found%s; read the file again and copy the exact text to replace", rel, hint)
		return "", "", &r
	case n > 1:
		lines := matchLines(text, old, 10)
		r := errorResult("%s: old_text matches %d times (at lines %s); include more surrounding lines so it matches once", rel, n, lines)
		return "", "", &r
	}
	i := strings.Index(text, old)
	line := 1 + strings.Count(text[:i], "\n")
	return text[:i] + repl + text[i+len(old):], fmt.Sprintf("replaced 1 match at line %d", line), nil
}

// matchLines lists the lines where old starts, at most max of them.
func matchLines(text, old string, max int) string {
	var lines []string
	off := 0
	for len(lines) < max {
		i := strings.Index(text[off:], old)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(1+strings.Count(text[:off+i], "\n")))
		off += i + 1
	}
	s := strings.Join(lines, ", ")
	if strings.Count(text, old) > max {
		s += ", ..."
	}
	return s
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// replaceLines replaces lines start..end (1-based, inclusive) of text.
func replaceLines(rel, text string, start, end int, repl string) (string, string, *Result) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if end > len(lines) {
		r := errorResult("%s: end_line %d is past the end (the file has %d lines)", rel, end, len(lines))
		return "", "", &r
	}
	if repl != "" && !strings.HasSuffix(repl, "\n") && strings.HasSuffix(lines[end-1], "\n") {
		repl += "\n"
	}
	var b strings.Builder
	for _, l := range lines[:start-1] {
		b.WriteString(l)
	}
	b.WriteString(repl)
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return b.String(), fmt.Sprintf("replaced lines %d-%d", start, end), nil
}

// insertLines inserts ins after line after (0: before the first line) of
// text, as whole lines: ins gets a final newline when it lacks one, and a
// last line without one gets one before the insert.
func insertLines(rel, text string, after int, ins string) (string, string, *Result) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if after > len(lines) {
		r := errorResult("%s: insert_after %d is past the end (the file has %d lines; %d appends)", rel, after, len(lines), len(lines))
		return "", "", &r
	}
	if !strings.HasSuffix(ins, "\n") {
		ins += "\n"
	}
	var b strings.Builder
	for _, l := range lines[:after] {
		b.WriteString(l)
	}
	if after > 0 && !strings.HasSuffix(lines[after-1], "\n") {
		b.WriteString("\n")
	}
	b.WriteString(ins)
	for _, l := range lines[after:] {
		b.WriteString(l)
	}
	n := strings.Count(ins, "\n")
	return b.String(), fmt.Sprintf("inserted %d %s after line %d", n, map[bool]string{true: "line", false: "lines"}[n == 1], after), nil
}
