package tools

import (
	"context"
	"fmt"
	"io/fs"
	"slices"

	"github.com/trioagent/trio/policy"
	"github.com/trioagent/trio/sandbox"
)

// The hard-link rule (see "Hard links" in the package doc): a file's
// content is shown only when every name it has is in the workspace and
// readable by the policy, since the policy judges names and a hard link is
// one more name.

// maxLinkScan bounds the entries one look-up of other names reads; past it
// the names not yet found count as outside the workspace (refused).
const maxLinkScan = 200_000

// multiLinked returns fi's identity and link count when fi is a regular
// file with more than one link.
func multiLinked(fi fs.FileInfo) (sandbox.FileID, uint64, bool) {
	if !fi.Mode().IsRegular() {
		return sandbox.FileID{}, 0, false
	}
	id, n := sandbox.Identity(fi)
	return id, n, n >= 2
}

// hardLinks finds the names, inside the workspace, of files with more than
// one link. One serves one tool call: the workspace is walked once, when a
// file first needs it, and what the walk saw is the answer for the call.
type hardLinks struct {
	ws      *Workspace
	built   bool
	partial bool // the walk stopped at maxLinkScan
	names   map[sandbox.FileID][]string
}

func (ws *Workspace) hardLinks() *hardLinks { return &hardLinks{ws: ws} }

// of returns the workspace names of the file id, sorted.
func (h *hardLinks) of(ctx context.Context, id sandbox.FileID) ([]string, error) {
	if !h.built {
		if err := h.build(ctx); err != nil {
			return nil, err
		}
	}
	return h.names[id], nil
}

func (h *hardLinks) build(ctx context.Context) error {
	h.names = map[sandbox.FileID][]string{}
	seen := 0
	err := fs.WalkDir(h.ws.Root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: what is under it stays unfound, which refuses
		}
		if seen++; seen > maxLinkScan {
			h.partial = true
			return fs.SkipAll
		}
		if seen%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if id, _, ok := multiLinked(fi); ok {
			h.names[id] = append(h.names[id], p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ns := range h.names {
		slices.Sort(ns)
	}
	h.built = true
	return nil
}

// deniedName returns the first other name of the file (rel, fi) that the
// calling gate's policy denies reading or Workspace.Visible hides, with
// the decision that says so. names are the file's workspace names.
func (h *hardLinks) deniedName(ctx context.Context, rel string, names []string) (string, policy.Decision, bool) {
	g := callingGate(ctx)
	for _, n := range names {
		if n == rel {
			continue
		}
		if g != nil {
			if d := g.policy.CheckPath(n, policy.Read); d.Verdict != policy.Allow {
				return n, d, true
			}
		}
		if h.ws.Visible != nil && !h.ws.Visible(n) {
			return n, policy.Decision{Verdict: policy.Deny, Rule: "workspace-visible",
				Reason: fmt.Sprintf("the workspace hides %q (Workspace.Visible)", n)}, true
		}
	}
	return "", policy.Decision{}, false
}

// refusal says why the content of rel, whose open file is fi, must not be
// shown; refused is false when it may be. The error is ctx's.
func (h *hardLinks) refusal(ctx context.Context, rel string, fi fs.FileInfo) (res Result, refused bool, err error) {
	id, nlink, ok := multiLinked(fi)
	if !ok {
		return Result{}, false, nil
	}
	names, err := h.of(ctx, id)
	if err != nil {
		return Result{}, false, err
	}
	if other, d, ok := h.deniedName(ctx, rel, names); ok {
		res := deniedResult(d)
		res.Output = fmt.Sprintf("%s: refused: it is a hard link to %s (the same file under another name); %s",
			rel, other, res.Output)
		return res, true, nil
	}
	if found := uint64(len(names)); found < nlink {
		why := ""
		if h.partial {
			why = fmt.Sprintf(" (the workspace has more than %d entries, too many to look through)", maxLinkScan)
		}
		return errorResult("%s: refused: the file has %d names (hard links) and only %d of them were found in the workspace%s; "+
			"a name outside it cannot be judged by the policy, so its content is not shown "+
			"(to use this name for a file of its own, write_file over it or delete_file it)",
			rel, nlink, found, why), true, nil
	}
	return Result{}, false, nil
}

// hides reports whether list_files leaves rel out: it is a second name of
// a file the policy denies reading.
func (h *hardLinks) hides(ctx context.Context, rel string, d fs.DirEntry) (bool, error) {
	if !d.Type().IsRegular() {
		return false, nil
	}
	fi, err := d.Info()
	if err != nil {
		return false, nil // gone: a name shows nothing of a content
	}
	id, _, ok := multiLinked(fi)
	if !ok {
		return false, nil
	}
	names, err := h.of(ctx, id)
	if err != nil {
		return false, err
	}
	_, _, denied := h.deniedName(ctx, rel, names)
	return denied, nil
}

// linkRefused carries a refusal out of a walk (search_files).
type linkRefused struct{ res Result }

func (e *linkRefused) Error() string { return e.res.Output }
