package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// SearchFilesName is the name of the search_files tool.
const SearchFilesName = "search_files"

// Bounds of search_files.
const (
	// MaxSearchMatches caps how many matching lines search_files returns.
	MaxSearchMatches = 200
	// MaxContextLines caps context_lines.
	MaxContextLines = 10
	// maxSearchFileBytes skips files larger than this.
	maxSearchFileBytes = 8 << 20
	// maxSearchLineBytes cuts long lines in the output.
	maxSearchLineBytes = 300
)

// SearchFilesParams are the arguments of search_files.
type SearchFilesParams struct {
	Pattern      string `json:"pattern" jsonschema:"description=Go regular expression (RE2 syntax) searched line by line."`
	Path         string `json:"path,omitempty" jsonschema:"description=Folder or file to search (relative to the workspace root). Default: the root."`
	Glob         string `json:"glob,omitempty" jsonschema:"description=Only search files matching this glob (e.g. *.go or src/**/*.py)."`
	ContextLines int    `json:"context_lines,omitempty" jsonschema:"description=Lines of context to show before and after each match (0 to 10). Default 0."`

	rel string
	re  *regexp.Regexp
}

// Effects says search_files reads one folder or file.
func (p *SearchFilesParams) Effects() []Effect { return []Effect{{Kind: EffectRead, Path: p.rel}} }

// SearchFiles returns the search_files tool working in ws.
func SearchFiles(ws *Workspace) Tool {
	return newTyped(SearchFilesName, description(SearchFilesName), func(p *SearchFilesParams) error {
		if p.Pattern == "" {
			return argErr("pattern", "must not be empty")
		}
		re, err := regexp.Compile(p.Pattern)
		if err != nil {
			return argErr("pattern", "not a valid Go regular expression: %v", err)
		}
		p.re = re
		if err := validGlob(p.Glob); err != nil {
			return argErr("glob", "malformed glob %q: %v", p.Glob, err)
		}
		if p.ContextLines < 0 || p.ContextLines > MaxContextLines {
			return argErr("context_lines", "must be between 0 and %d, got %d", MaxContextLines, p.ContextLines)
		}
		p.rel, err = ws.Rel("path", p.Path)
		return err
	}, ws.searchFiles)
}

func (ws *Workspace) searchFiles(ctx context.Context, p SearchFilesParams) (Result, error) {
	var (
		out     strings.Builder
		matches int
		files   int
		capped  bool
		links   = ws.hardLinks()
		skipped int // hard links refused
		refusal *Result
	)
	search := func(rel string) error {
		if p.Glob != "" && !globMatch(p.Glob, relTo(p.rel, rel)) {
			return nil
		}
		n, err := ws.searchFile(ctx, rel, p.re, p.ContextLines, MaxSearchMatches-matches, &out, links)
		if lr := (*linkRefused)(nil); errors.As(err, &lr) {
			skipped++
			refusal = &lr.res
			return nil
		}
		if n > 0 {
			files++
		}
		matches += n
		if errors.Is(err, errCapped) {
			capped = true
		}
		return err
	}
	st, err := ws.Root.Stat(p.rel)
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	if st.IsDir() {
		err = ws.walk(ctx, p.rel, func(rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() {
				return nil
			}
			return search(rel)
		})
	} else if err = ws.checked("search", p.rel); err == nil {
		if err = search(p.rel); err == nil && refusal != nil {
			return *refusal, nil // the file named is refused as read_file refuses it
		}
	}
	switch {
	case errors.Is(err, errCapped):
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	case err != nil:
		return fsResult(p.rel, err), nil
	}
	if skipped > 0 {
		fmt.Fprintf(&out, "[skipped %d files with more than one name (hard links) whose other names are denied or outside the workspace; read_file on one says why]\n", skipped)
	}
	switch {
	case capped:
		fmt.Fprintf(&out, "[stopped at %d matches; narrow the pattern, path or glob]\n", MaxSearchMatches)
	case matches == 0:
		fmt.Fprintf(&out, "no matches for %q under %s\n", p.Pattern, p.rel)
	default:
		fmt.Fprintf(&out, "[%d matches in %d files]\n", matches, files)
	}
	return Result{OK: true, Output: out.String(), Truncated: capped}, nil
}

// searchFile writes up to room matches of re in rel to out, as
// "file:line: text" with context lines as "file-line- text" and "--"
// between separate groups. Binary and very large files are skipped; a file
// the hard-link rule refuses comes back as a *linkRefused error.
func (ws *Workspace) searchFile(ctx context.Context, rel string, re *regexp.Regexp, ctxLines, room int, out *strings.Builder, links *hardLinks) (int, error) {
	f, err := ws.Root.Open(rel)
	if err != nil {
		return 0, nil // vanished or unreadable: skip
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() > maxSearchFileBytes {
		return 0, nil
	}
	if lst, err := ws.Root.Lstat(rel); err != nil || !os.SameFile(st, lst) {
		return 0, nil // a symlink swapped in since the walk saw a file: skip
	}
	if res, refused, err := links.refusal(ctx, rel, st); err != nil {
		return 0, err
	} else if refused {
		return 0, &linkRefused{res}
	}
	br := bufio.NewReader(f)
	if head, _ := br.Peek(8000); bytes.IndexByte(head, 0) >= 0 {
		return 0, nil
	}
	data, err := io.ReadAll(br)
	if err != nil {
		return 0, nil
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	n, lastShown := 0, -1
	for i, l := range lines {
		if !re.MatchString(l) {
			continue
		}
		if n == room {
			return n, errCapped
		}
		from := max(i-ctxLines, lastShown+1)
		if ctxLines > 0 && lastShown >= 0 && from > lastShown+1 {
			out.WriteString("--\n")
		}
		for j := from; j < i; j++ {
			fmt.Fprintf(out, "%s-%d- %s\n", rel, j+1, cutLine(lines[j]))
		}
		fmt.Fprintf(out, "%s:%d: %s\n", rel, i+1, cutLine(l))
		lastShown = i
		for j := i + 1; j <= min(i+ctxLines, len(lines)-1); j++ {
			if re.MatchString(lines[j]) {
				break // printed as a match in its turn
			}
			fmt.Fprintf(out, "%s-%d- %s\n", rel, j+1, cutLine(lines[j]))
			lastShown = j
		}
		n++
	}
	if ctxLines > 0 && n > 0 {
		out.WriteString("--\n")
	}
	return n, nil
}

func cutLine(s string) string {
	s = strings.TrimRight(s, "\r")
	if len(s) > maxSearchLineBytes {
		return s[:maxSearchLineBytes] + " [cut]"
	}
	return s
}
