package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/trioagent/trio/policy"
)

// ttyConfirmer is a policy.Confirmer that asks a person on the terminal.
// It shows the tool, the exact argv or path, the rule that matched and its
// reason, and reads one line: y (yes, once), n (no), a (always: yes to every
// action under the same rule for the rest of the run; the gate records it
// in the audit log). Anything else — an empty line, garbage, end of input,
// the timeout, Ctrl-C — is no.
//
// The answer is read from the terminal file with read deadlines (the file
// is in the runtime's poller), so a timed-out question leaves no goroutine
// behind that would steal the next answer. Input typed before the question
// appears is discarded, so a stray keystroke cannot answer it.
type ttyConfirmer struct {
	mu  sync.Mutex // one question at a time
	tty *os.File
	out io.Writer
	own bool // close tty on Close
}

// openTTYConfirmer opens /dev/tty for the prompt.
func openTTYConfirmer() (*ttyConfirmer, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	c, err := newTTYConfirmer(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.own = true
	return c, nil
}

// newTTYConfirmer asks on tty, which must support read deadlines.
func newTTYConfirmer(tty *os.File) (*ttyConfirmer, error) {
	if err := tty.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("terminal %s does not support read deadlines: %w", tty.Name(), err)
	}
	return &ttyConfirmer{tty: tty, out: tty}, nil
}

// Close releases the terminal when the confirmer opened it.
func (c *ttyConfirmer) Close() error {
	if c.own {
		return c.tty.Close()
	}
	return nil
}

// Confirm puts req to the person. It returns AnswerNo with ctx's error when
// ctx ends first (timeout or Ctrl-C).
func (c *ttyConfirmer) Confirm(ctx context.Context, req policy.ConfirmRequest) (policy.Answer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.discardTypeAhead()
	fmt.Fprint(c.out, renderQuestion(req))
	line, err := c.readLine(ctx)
	if err != nil {
		why := "no answer"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			why = fmt.Sprintf("no answer within %s", req.Timeout)
		case errors.Is(err, context.Canceled):
			why = "interrupted"
		case errors.Is(err, io.EOF):
			why = "end of input"
		}
		fmt.Fprintf(c.out, "\r\n  → %s: denied\r\n", why)
		if ctx.Err() != nil {
			return policy.AnswerNo, ctx.Err()
		}
		return policy.AnswerNo, nil
	}
	a, ok := parseAnswer(line)
	switch {
	case !ok:
		fmt.Fprintf(c.out, "  → %q is not y, n or a: denied\r\n", line)
	case a == policy.AnswerAlways:
		fmt.Fprintf(c.out, "  → yes, and to every action under this rule for the rest of the run\r\n")
	case a == policy.AnswerYes:
		fmt.Fprintf(c.out, "  → yes, once\r\n")
	default:
		fmt.Fprintf(c.out, "  → denied\r\n")
	}
	return a, nil
}

func parseAnswer(line string) (policy.Answer, bool) {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return policy.AnswerYes, true
	case "a", "always":
		return policy.AnswerAlways, true
	case "n", "no":
		return policy.AnswerNo, true
	}
	return policy.AnswerNo, false
}

func renderQuestion(req policy.ConfirmRequest) string {
	var b strings.Builder
	b.WriteString("\r\n── Trio asks for confirmation ──\r\n")
	fmt.Fprintf(&b, "  tool:    %s (%s)\r\n", req.Tool, req.Action)
	switch {
	case len(req.Argv) > 0:
		fmt.Fprintf(&b, "  argv:    %s\r\n", quoteArgv(req.Argv))
	case req.Command != "":
		fmt.Fprintf(&b, "  command: %s\r\n", req.Command)
	}
	if req.Path != "" {
		fmt.Fprintf(&b, "  path:    %s\r\n", req.Path)
	}
	fmt.Fprintf(&b, "  rule:    %s\r\n", req.Decision.Rule)
	fmt.Fprintf(&b, "  reason:  %s\r\n", req.Decision.Reason)
	limit := ""
	if req.Timeout > 0 {
		limit = fmt.Sprintf("; no answer in %s = no", req.Timeout)
	}
	fmt.Fprintf(&b, "Allow? [y] yes once  [n] no  [a] always for this rule, this run%s: ", limit)
	return b.String()
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// discardTypeAhead drops what was typed before the question.
func (c *ttyConfirmer) discardTypeAhead() {
	buf := make([]byte, 256)
	for {
		c.tty.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		n, err := c.tty.Read(buf)
		if n == 0 || err != nil {
			break
		}
	}
	c.tty.SetReadDeadline(time.Time{})
}

// readLine reads one line, up to ctx's end. ctx's end moves the read
// deadline to now, which wakes the blocked Read; nothing outlives the call.
func (c *ttyConfirmer) readLine(ctx context.Context) (string, error) {
	dl, _ := ctx.Deadline() // zero when none
	c.tty.SetReadDeadline(dl)
	defer c.tty.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.tty.SetReadDeadline(time.Now()) })
	defer stop()
	var line []byte
	buf := make([]byte, 256)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := c.tty.Read(buf)
		line = append(line, buf[:n]...)
		if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
			return string(line[:i]), nil
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			if !dl.IsZero() && !time.Now().Before(dl) {
				// The read deadline is ctx's: its timer fires at once.
				<-ctx.Done()
				return "", ctx.Err()
			}
		case err != nil:
			return "", err
		case n == 0:
			return "", io.EOF
		}
		if len(line) > 4096 {
			return string(line), nil // garbage: counts as no
		}
	}
}
