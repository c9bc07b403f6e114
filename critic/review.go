package critic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/trioagent/trio/llm"
	"github.com/trioagent/trio/planner"
)

// AgentReviewer is the role name of the reviewer's model calls, so that its
// tokens are counted apart from the Critic's.
const AgentReviewer = "reviewer"

// Bounds of the change shown to the reviewer.
const (
	maxReviewFile  = 16 << 10 // bytes of one changed file
	maxReviewTotal = 64 << 10 // bytes of every changed file together
	maxReviewFiles = 200      // files walked into the change list
)

// Severity ranks a reviewer's finding.
type Severity string

// Severities, lowest first.
const (
	SeverityInfo     Severity = "info"
	SeverityLow      Severity = "low"
	SeverityMedium   Severity = "medium"
	SeverityHigh     Severity = "high"
	SeverityCritical Severity = "critical"
)

var severities = []Severity{SeverityInfo, SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}

// Rank is the severity's place in the order info < low < medium < high <
// critical; -1 for an unknown severity.
func (s Severity) Rank() int { return slices.Index(severities, s) }

// ParseSeverity checks a severity's name.
func ParseSeverity(s string) (Severity, error) {
	if Severity(s).Rank() < 0 {
		return "", fmt.Errorf("severity %q is not one of info, low, medium, high, critical", s)
	}
	return Severity(s), nil
}

// Review is the reviewer's judgement of a change whose checks all passed.
type Review struct {
	// Score is the reviewer's mark for the change, 0 (unusable) to 10.
	Score    int             `json:"score"`
	Findings []ReviewFinding `json:"findings,omitempty"`
	Summary  string          `json:"summary,omitempty"`
	// Files are the changed files the reviewer was shown.
	Files []string `json:"files"`
	// Blocking says the findings at or above the threshold sent the Worker
	// back (or stopped the run); false for an advisory review.
	Blocking bool `json:"blocking"`
}

// ReviewFinding is one problem the reviewer found.
type ReviewFinding struct {
	Severity Severity `json:"severity"`
	// Category is correctness, security or quality.
	Category string `json:"category"`
	// Location is file or file:line.
	Location string `json:"location"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
}

// AtOrAbove returns the findings whose severity is at least s.
func (r Review) AtOrAbove(s Severity) []ReviewFinding {
	var out []ReviewFinding
	for _, f := range r.Findings {
		if f.Severity.Rank() >= s.Rank() {
			out = append(out, f)
		}
	}
	return out
}

// Text renders the review for the Worker and the report.
func (r Review) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Review score %d/10", r.Score)
	if r.Summary != "" {
		b.WriteString(": " + r.Summary)
	}
	b.WriteString("\n")
	for i, f := range r.Findings {
		fmt.Fprintf(&b, "%d. [%s, %s] %s: %s", i+1, f.Severity, f.Category, f.Location, f.Problem)
		if f.Fix != "" {
			b.WriteString(" — fix: " + f.Fix)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// CheckReview is the name of the check a blocking review adds to passing
// findings.
const CheckReview = "review"

// KindReview marks a failure the reviewer found.
const KindReview Kind = "review"

// WithReview returns f with the review attached. When f passed and the
// review has findings at or above blockAt (blockAt empty or unknown:
// advisory), the
// verdict becomes fail with one "review" failure per such finding and a
// failed "review" check; a failing f is never changed into a pass.
func (f Findings) WithReview(rev Review, blockAt Severity) Findings {
	if !f.Passed() || blockAt.Rank() < 0 || len(rev.AtOrAbove(blockAt)) == 0 {
		f.Review = &rev
		return f
	}
	block := rev.AtOrAbove(blockAt)
	rev.Blocking = true
	f.Review = &rev
	f.Verdict = VerdictFail
	var lines []string
	for _, x := range block {
		f.Failures = append(f.Failures, Failure{TestID: "review:" + x.Category, Location: x.Location,
			Expected: x.Fix, Actual: x.Problem, Kind: KindReview})
		lines = append(lines, fmt.Sprintf("[%s] %s: %s", x.Severity, x.Location, x.Problem))
	}
	f.Checks = append(f.Checks, CheckResult{Name: CheckReview, Detail: listDetail(
		fmt.Sprintf("every check passed, but the reviewer found %d problem(s) at or above %s (score %d/10)", len(block), blockAt, rev.Score), lines)})
	f.Summary = "Every check passed, but the reviewer found problems to fix first. " + rev.Summary
	return f
}

// reviewReply is the model-facing Review: every field required.
type reviewReply struct {
	Score    int                  `json:"score" jsonschema:"minimum=0,maximum=10" jsonschema_description:"0 (unusable) to 10 (nothing to improve)."`
	Findings []reviewFindingReply `json:"findings" jsonschema_description:"Each distinct problem, most severe first; empty when there is none."`
	Summary  string               `json:"summary" jsonschema_description:"One or two sentences on the change as a whole."`
}

type reviewFindingReply struct {
	Severity string `json:"severity" jsonschema:"enum=info,enum=low,enum=medium,enum=high,enum=critical"`
	Category string `json:"category" jsonschema:"enum=correctness,enum=security,enum=quality"`
	Location string `json:"location" jsonschema_description:"file or file:line of the problem."`
	Problem  string `json:"problem" jsonschema_description:"What is wrong, quoting the code."`
	Fix      string `json:"fix" jsonschema_description:"What to change."`
}

func (r reviewReply) validate() []string {
	var probs []string
	if r.Score < 0 || r.Score > 10 {
		probs = append(probs, fmt.Sprintf("score: %d is not between 0 and 10", r.Score))
	}
	for i, f := range r.Findings {
		if Severity(f.Severity).Rank() < 0 {
			probs = append(probs, fmt.Sprintf("findings[%d].severity: %q is not one of info, low, medium, high, critical", i, f.Severity))
		}
		if !slices.Contains([]string{"correctness", "security", "quality"}, f.Category) {
			probs = append(probs, fmt.Sprintf("findings[%d].category: %q is not one of correctness, security, quality", i, f.Category))
		}
		if strings.TrimSpace(f.Problem) == "" {
			probs = append(probs, fmt.Sprintf("findings[%d].problem: is empty", i))
		}
	}
	return probs
}

// ChangedFile is a workspace file the run created, changed or deleted.
type ChangedFile struct {
	Path   string `json:"path"`
	Status string `json:"status"` // "added", "modified" or "deleted"
}

// WithBaselineSums gives the SHA-256 (hex) of each workspace file before
// the run, so that Changes can tell modified files from untouched ones.
// Without it every file counts as added.
func WithBaselineSums(sums map[string]string) Option {
	return func(c *Critic) { c.baseSums = maps.Clone(sums) }
}

// WithChangeList gives the list of the files the run created, changed or
// deleted, for Changes to use instead of comparing the workspace with the
// baseline sums: a caller that keeps its own record of the starting
// workspace (the agent's start snapshot, which holds every file however
// many there are, and leaves out what the policy denies) answers from it.
func WithChangeList(list func() ([]ChangedFile, error)) Option {
	return func(c *Critic) { c.changeList = list }
}

// FileSums returns the SHA-256 (hex) of every regular file of fsys, at most
// limit files, skipping .git: the baseline WithBaselineSums takes. Files
// are hashed as they are read (memory does not grow with a file's size); a
// file or folder that cannot be read, or whose name fs.FS refuses (not
// UTF-8), is not fatal: such a file's sum is "unreadable".
func FileSums(fsys fs.FS, limit int) (map[string]string, error) {
	sums := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == ".":
			return err
		case err != nil:
			return nil
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case !d.Type().IsRegular():
			return nil
		case len(sums) >= limit:
			return fs.SkipAll
		}
		sums[p] = "unreadable"
		f, err := fsys.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			sums[p] = hex.EncodeToString(h.Sum(nil))
		}
		return nil
	})
	return sums, err
}

// Changes lists the files of the workspace that differ from the baseline
// (WithBaselineSums), leaving out the acceptance tests folder, .git and
// caches, sorted by path. It is the change the reviewer reads.
func (c *Critic) Changes(plan planner.Plan) ([]ChangedFile, error) {
	var now map[string]string
	var listed []ChangedFile
	var err error
	if c.changeList != nil {
		listed, err = c.changeList()
	} else {
		now, err = FileSums(c.ws.Root.FS(), maxReviewFiles)
	}
	if err != nil {
		return nil, fmt.Errorf("critic: list the changed files: %w", err)
	}
	skip := func(p string) bool {
		if p == plan.TestsFolder() || strings.HasPrefix(p, plan.TestsFolder()+"/") {
			return true
		}
		for _, seg := range strings.Split(p, "/") {
			if cacheDirs[seg] {
				return true
			}
		}
		return tempFile.MatchString(pathBase(p))
	}
	var out []ChangedFile
	for _, f := range listed {
		if !skip(f.Path) {
			out = append(out, f)
		}
	}
	for p, sum := range now {
		if skip(p) {
			continue
		}
		switch old, ok := c.baseSums[p]; {
		case !ok:
			out = append(out, ChangedFile{Path: p, Status: "added"})
		case old != sum:
			out = append(out, ChangedFile{Path: p, Status: "modified"})
		}
	}
	for p := range c.baseSums {
		if _, ok := now[p]; !ok && !skip(p) {
			out = append(out, ChangedFile{Path: p, Status: "deleted"})
		}
	}
	slices.SortFunc(out, func(a, b ChangedFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Review has the model (role "reviewer") judge the change once every check
// passed: correctness risks, security problems and quality, with a
// severity for each finding and a score. It reads the goal, the plan and
// the changed files (Changes). An invalid reply goes back to the model
// once; a second is an error, never an empty review.
func (c *Critic) Review(ctx context.Context, plan planner.Plan) (Review, error) {
	changed, err := c.Changes(plan)
	if err != nil {
		return Review{}, err
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: c.promptReviewer},
		{Role: llm.RoleUser, Content: c.reviewMessage(plan, changed)},
	}
	var last string
	for attempt := 1; attempt <= 2; attempt++ {
		resp, err := c.complete(ctx, AgentReviewer, msgs, c.reviewSchema)
		if err != nil {
			return Review{}, err
		}
		content, err := replyText(resp)
		if err == nil {
			var r reviewReply
			if r, err = llm.DecodeOutput[reviewReply](content); err == nil {
				if probs := r.validate(); len(probs) > 0 {
					err = fmt.Errorf("%s", strings.Join(probs, "\n"))
				} else {
					return reviewOf(r, changed), nil
				}
			}
		}
		last = err.Error()
		msgs = reask(msgs, resp, "- "+strings.ReplaceAll(last, "\n", "\n- "))
	}
	return Review{}, fmt.Errorf("critic: the reviewer's reply was invalid twice: %s", clip(strings.ReplaceAll(last, "\n", "; "), maxMessage))
}

func reviewOf(r reviewReply, changed []ChangedFile) Review {
	rev := Review{Score: r.Score, Summary: strings.TrimSpace(r.Summary)}
	for _, f := range changed {
		rev.Files = append(rev.Files, f.Path)
	}
	for _, f := range r.Findings {
		rev.Findings = append(rev.Findings, ReviewFinding{Severity: Severity(f.Severity), Category: f.Category,
			Location: strings.TrimSpace(f.Location), Problem: strings.TrimSpace(f.Problem), Fix: strings.TrimSpace(f.Fix)})
	}
	// Most severe first, whatever order the model chose.
	slices.SortStableFunc(rev.Findings, func(a, b ReviewFinding) int { return b.Severity.Rank() - a.Severity.Rank() })
	return rev
}

func (c *Critic) reviewMessage(plan planner.Plan, changed []ChangedFile) string {
	var b strings.Builder
	b.WriteString("# Goal\n\n")
	b.WriteString(strings.TrimSpace(plan.Goal))
	b.WriteString("\n\n")
	writePlan(&b, plan)
	b.WriteString("\n# Every deterministic check passed\n\nThe acceptance tests, the planned files, the CLI check and the stray-file check all passed.\n")
	b.WriteString("\n# The change (files created, modified or deleted by the run)\n\n")
	if len(changed) == 0 {
		b.WriteString("(no file changed)\n")
	}
	total := 0
	for _, f := range changed {
		if f.Status == "deleted" {
			fmt.Fprintf(&b, "## %s (deleted)\n\n", f.Path)
			continue
		}
		data, err := c.ws.Root.ReadFile(f.Path)
		if err != nil {
			fmt.Fprintf(&b, "## %s (%s; unreadable: %v)\n\n", f.Path, f.Status, err)
			continue
		}
		if total >= maxReviewTotal {
			fmt.Fprintf(&b, "## %s (%s; left out: the change is too long)\n\n", f.Path, f.Status)
			continue
		}
		text := string(data)
		if len(text) > maxReviewFile {
			text = clip(text, maxReviewFile) + "\n(cut)"
		}
		total += len(text)
		fmt.Fprintf(&b, "## %s (%s)\n```\n%s\n```\n\n", f.Path, f.Status, strings.TrimRight(text, "\n"))
	}
	return b.String()
}
