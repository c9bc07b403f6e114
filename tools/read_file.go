package tools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// ReadFileName is the name of the read_file tool.
const ReadFileName = "read_file"

// Bounds of read_file.
const (
	// MaxReadBytes caps the text read_file returns for one call.
	MaxReadBytes = 256 << 10
	// DefaultReadLines is how many lines read_file returns without a limit.
	DefaultReadLines = 2000
	// maxLineBytes cuts single very long lines (minified files).
	maxLineBytes = 2000
)

// ReadFileParams are the arguments of read_file.
type ReadFileParams struct {
	Path   string `json:"path" jsonschema:"description=File to read (relative to the workspace root)."`
	Offset int    `json:"offset,omitempty" jsonschema:"description=First line to return (1-based). Default 1.,minimum=1"`
	Limit  int    `json:"limit,omitempty" jsonschema:"description=Most lines to return. Default 2000.,minimum=1"`

	rel string
}

// Effects says read_file reads one path.
func (p *ReadFileParams) Effects() []Effect { return []Effect{{Kind: EffectRead, Path: p.rel}} }

// ReadFile returns the read_file tool working in ws.
func ReadFile(ws *Workspace) Tool {
	return newTyped(ReadFileName, description(ReadFileName), func(p *ReadFileParams) error {
		if p.Offset < 0 {
			return argErr("offset", "must be 1 or more, got %d", p.Offset)
		}
		if p.Limit < 0 {
			return argErr("limit", "must be 1 or more, got %d", p.Limit)
		}
		var err error
		p.rel, err = ws.Rel("path", p.Path)
		return err
	}, ws.readFile)
}

func (ws *Workspace) readFile(ctx context.Context, p ReadFileParams) (Result, error) {
	f, err := ws.openChecked(p.rel)
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fsResult(p.rel, err), nil
	}
	if st.IsDir() {
		return errorResult("%s: is a directory; use list_files", p.rel), nil
	}
	if res, refused, err := ws.hardLinks().refusal(ctx, p.rel, st); err != nil || refused {
		return res, err
	}
	offset, limit := max(p.Offset, 1), p.Limit
	if limit == 0 {
		limit = DefaultReadLines
	}

	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(8000); bytes.IndexByte(head, 0) >= 0 {
		return errorResult("%s: binary file; read_file shows text only", p.rel), nil
	}
	var (
		out       strings.Builder
		line      int // lines seen so far
		last      int // last line written
		cutBytes  bool
		longLines bool
	)
	for {
		if line%1024 == 0 && ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		text, err := br.ReadString('\n')
		if text == "" && err != nil {
			if err != io.EOF {
				return fsResult(p.rel, err), nil
			}
			break
		}
		line++
		if line < offset || line >= offset+limit || cutBytes {
			continue // keep counting for the total
		}
		text = strings.TrimRight(text, "\r\n")
		if len(text) > maxLineBytes {
			text = text[:maxLineBytes] + " [line cut]"
			longLines = true
		}
		entry := fmt.Sprintf("%6d\t%s\n", line, text)
		if out.Len()+len(entry) > MaxReadBytes {
			cutBytes = true
			continue
		}
		out.WriteString(entry)
		last = line
	}
	total := line
	res := Result{OK: true}
	switch {
	case total == 0:
		res.Output = fmt.Sprintf("%s is empty", p.rel)
		return res, nil
	case offset > total:
		return errorResult("%s: offset %d is past the end (the file has %d lines)", p.rel, offset, total), nil
	}
	if last < total {
		why := "limit"
		if cutBytes {
			why = fmt.Sprintf("the %d KiB cap", MaxReadBytes>>10)
			res.Truncated = true
		}
		fmt.Fprintf(&out, "[showing lines %d-%d of %d (cut by %s); call read_file with offset=%d for more]\n",
			offset, last, total, why, last+1)
	}
	if longLines {
		fmt.Fprintf(&out, "[lines longer than %d bytes were cut]\n", maxLineBytes)
	}
	res.Output = out.String()
	return res, nil
}
