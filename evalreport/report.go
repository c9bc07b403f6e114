package evalreport

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trioagent/trio/viewer"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

var page = template.Must(template.New("page").Parse(pageHTML))

// FileName is the page's default name in the eval's output folder.
const FileName = "report.html"

// ErrNoEval is wrapped when the folder holds no readable eval.json.
var ErrNoEval = errors.New("not an eval output folder")

// Estimate is a rate with its 95 % interval, as eval.json writes one.
type Estimate struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// Data is what the page shows, embedded in it as JSON.
type Data struct {
	Suite     string `json:"suite"`
	Sandbox   string `json:"sandbox"`
	Samples   int    `json:"samples"`
	Tasks     int    `json:"tasks"`
	Runs      int    `json:"runs"`
	Passed    int    `json:"passed"`
	Completed int    `json:"completed"`
	Agreed    int    `json:"agreed"`
	// FalseCompleted counts the COMPLETED runs whose hidden tests fail.
	FalseCompleted int `json:"false_completed"`
	// PassAt1, Agreement and FalseSuccess are eval.json's statistics
	// when it has them, else Wilson's intervals over the runs.
	PassAt1      Estimate `json:"pass_at_1"`
	Agreement    Estimate `json:"agreement"`
	FalseSuccess Estimate `json:"false_success"`
	// PassAtK is eval.json's pass@k for k = 1..samples (empty without).
	PassAtK    []PassK `json:"pass_at_k"`
	Unisolated int     `json:"unisolated"`
	ConfigHash string  `json:"config_hash,omitempty"`
	// CostKind is "cost_usd" when any run has a cost, else "tokens": what
	// the chart's horizontal axis shows.
	CostKind      string         `json:"cost_kind"`
	Tags          []TagRate      `json:"tags"`
	PerTask       []TaskPoint    `json:"per_task"`
	Disagreements []Disagreement `json:"disagreements"`
}

// PassK is pass@k with its interval.
type PassK struct {
	K int `json:"k"`
	Estimate
}

// TagRate is the pass rate of the runs of the tasks with a tag.
type TagRate struct {
	Tag    string   `json:"tag"`
	Tasks  int      `json:"tasks"`
	Runs   int      `json:"runs"`
	Passed int      `json:"passed"`
	Rate   Estimate `json:"rate"`
}

// TaskPoint is one task: its pass rate over its samples, and its mean
// cost and tokens.
type TaskPoint struct {
	ID         string   `json:"id"`
	Tags       []string `json:"tags"`
	Runs       int      `json:"runs"`
	Passed     int      `json:"passed"`
	Rate       Estimate `json:"rate"`
	MeanCost   float64  `json:"mean_cost_usd"`
	MeanTokens float64  `json:"mean_tokens"`
}

// Disagreement is a run whose own verdict and the hidden tests differ.
type Disagreement struct {
	Task   string `json:"task"`
	Sample int    `json:"sample"`
	RunID  string `json:"run_id"`
	// Kind is false_success (COMPLETED, hidden tests fail) or
	// missed_success (not COMPLETED, hidden tests pass).
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Reason string `json:"reason"`
	Hidden string `json:"hidden"`
	// View is the run's trio view page relative to the report ("" when
	// the run folder is gone; Missing then says why).
	View    string `json:"view,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// evalFile is the part of eval.json the page reads; everything else is
// ignored, and the statistics may be absent.
type evalFile struct {
	Suite   string     `json:"suite"`
	Sandbox string     `json:"sandbox"`
	Samples int        `json:"samples"`
	Tasks   []runEntry `json:"tasks"`
	Stats   *struct {
		PassAt1      *Estimate `json:"pass_at_1"`
		PassAtK      []PassK   `json:"pass_at_k"`
		Agreement    *Estimate `json:"agreement"`
		FalseSuccess *Estimate `json:"false_success"`
	} `json:"stats"`
	PerTask []struct {
		ID         string    `json:"id"`
		Runs       int       `json:"runs"`
		Passed     int       `json:"passed"`
		PassRate   *Estimate `json:"pass_rate"`
		MeanCost   float64   `json:"mean_cost_usd"`
		MeanTokens float64   `json:"mean_tokens"`
	} `json:"per_task"`
	Provenance *struct {
		ConfigHash string `json:"config_hash"`
	} `json:"provenance"`
}

type runEntry struct {
	ID     string   `json:"id"`
	Tags   []string `json:"tags"`
	Sample int      `json:"sample"`
	RunID  string   `json:"run_id"`
	RunDir string   `json:"run_dir"`
	Hidden struct {
		Pass   bool   `json:"pass"`
		Detail string `json:"detail"`
	} `json:"hidden"`
	Status    string  `json:"status"`
	Reason    string  `json:"reason"`
	Completed bool    `json:"completed"`
	Tokens    int     `json:"tokens"`
	Cost      float64 `json:"cost_usd"`
	Isolated  bool    `json:"isolated"`
}

// Load reads the eval output folder out and builds the page's data. The
// links to run pages are made relative to page, the report's path; each
// linked run gets its view.html written (or rewritten) by package viewer.
func Load(out, page string) (*Data, error) {
	out, err := filepath.Abs(out)
	if err != nil {
		return nil, fmt.Errorf("evalreport: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(out, "eval.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEval, err)
	}
	var ef evalFile
	if err := json.Unmarshal(b, &ef); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoEval, filepath.Join(out, "eval.json"), err)
	}
	d := &Data{Suite: ef.Suite, Sandbox: ef.Sandbox, Samples: max(ef.Samples, 1), Runs: len(ef.Tasks), CostKind: "tokens",
		Tags: []TagRate{}, PerTask: []TaskPoint{}, Disagreements: []Disagreement{}, PassAtK: []PassK{}}
	if ef.Provenance != nil {
		d.ConfigHash = ef.Provenance.ConfigHash
	}
	type acc struct {
		tags         []string
		runs, passed int
		cost, tokens float64
	}
	tasks := map[string]*acc{}
	var order []string
	tags := map[string]*TagRate{}
	tagTasks := map[string]map[string]bool{}
	for _, r := range ef.Tasks {
		a := tasks[r.ID]
		if a == nil {
			a = &acc{tags: r.Tags}
			tasks[r.ID] = a
			order = append(order, r.ID)
		}
		a.runs++
		a.cost += r.Cost
		a.tokens += float64(r.Tokens)
		if r.Cost > 0 {
			d.CostKind = "cost_usd"
		}
		if r.Hidden.Pass {
			a.passed++
			d.Passed++
		}
		if r.Completed {
			d.Completed++
		}
		if r.Completed == r.Hidden.Pass {
			d.Agreed++
		}
		if !r.Isolated {
			d.Unisolated++
		}
		for _, tag := range r.Tags {
			tr := tags[tag]
			if tr == nil {
				tr = &TagRate{Tag: tag}
				tags[tag] = tr
				tagTasks[tag] = map[string]bool{}
			}
			tr.Runs++
			tagTasks[tag][r.ID] = true
			if r.Hidden.Pass {
				tr.Passed++
			}
		}
		if r.Completed != r.Hidden.Pass {
			d.Disagreements = append(d.Disagreements, disagreement(out, page, r))
		}
	}
	d.Tasks = len(order)
	for _, id := range order {
		a := tasks[id]
		d.PerTask = append(d.PerTask, TaskPoint{ID: id, Tags: a.tags, Runs: a.runs, Passed: a.passed, Rate: wilson(a.passed, a.runs),
			MeanCost: a.cost / float64(a.runs), MeanTokens: a.tokens / float64(a.runs)})
	}
	// eval.json's own per-task numbers, where it has them.
	for _, pt := range ef.PerTask {
		i := slices.IndexFunc(d.PerTask, func(p TaskPoint) bool { return p.ID == pt.ID })
		if i < 0 || pt.Runs == 0 {
			continue
		}
		p := &d.PerTask[i]
		p.Runs, p.Passed, p.MeanCost, p.MeanTokens = pt.Runs, pt.Passed, pt.MeanCost, pt.MeanTokens
		if pt.PassRate != nil {
			p.Rate = *pt.PassRate
		}
	}
	for _, tag := range slices.Sorted(maps.Keys(tags)) {
		tr := tags[tag]
		tr.Tasks = len(tagTasks[tag])
		tr.Rate = wilson(tr.Passed, tr.Runs)
		d.Tags = append(d.Tags, *tr)
	}
	for _, r := range ef.Tasks {
		if r.Completed && !r.Hidden.Pass {
			d.FalseCompleted++
		}
	}
	d.PassAt1, d.Agreement, d.FalseSuccess = wilson(d.Passed, d.Runs), wilson(d.Agreed, d.Runs), wilson(d.FalseCompleted, d.Completed)
	if s := ef.Stats; s != nil {
		if s.PassAt1 != nil {
			d.PassAt1 = *s.PassAt1
		}
		if s.Agreement != nil {
			d.Agreement = *s.Agreement
		}
		if s.FalseSuccess != nil {
			d.FalseSuccess = *s.FalseSuccess
		}
		d.PassAtK = append(d.PassAtK, s.PassAtK...)
	}
	return d, nil
}

// disagreement describes r and writes its run's view page.
func disagreement(out, page string, r runEntry) Disagreement {
	d := Disagreement{Task: r.ID, Sample: max(r.Sample, 1), RunID: r.RunID, Kind: "missed_success", Status: r.Status, Reason: r.Reason, Hidden: "pass"}
	if r.Completed {
		d.Kind, d.Hidden = "false_success", "fail"
		if r.Hidden.Detail != "" {
			d.Hidden = r.Hidden.Detail
		}
	}
	dir := runDir(out, r)
	if dir == "" {
		d.Missing = "the run folder is not under " + out
		return d
	}
	view, err := viewer.WriteFile(dir, "")
	if err != nil {
		d.Missing = err.Error()
		return d
	}
	rel, err := filepath.Rel(filepath.Dir(page), view)
	if err != nil {
		d.Missing = err.Error()
		return d
	}
	d.View = (&url.URL{Path: filepath.ToSlash(rel)}).EscapedPath()
	return d
}

// runDir finds r's run folder: where eval.json says, else (the output
// folder was moved) the folder named by its run id under out/tasks/<id>.
func runDir(out string, r runEntry) string {
	if fi, err := os.Stat(filepath.Join(r.RunDir, "report.json")); err == nil && !fi.IsDir() {
		return r.RunDir
	}
	if r.RunID == "" || !filepath.IsLocal(r.ID) {
		return ""
	}
	found := ""
	filepath.WalkDir(filepath.Join(out, "tasks", r.ID), func(p string, de fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return fs.SkipDir
		}
		if de.IsDir() && de.Name() == r.RunID {
			found = p
			return fs.SkipAll
		}
		if de.IsDir() && (de.Name() == "workspace" || de.Name() == "judge" || strings.HasPrefix(de.Name(), "judge-")) {
			return fs.SkipDir
		}
		return nil
	})
	return found
}

// wilson is c of n with Wilson's 95 % interval.
func wilson(c, n int) Estimate {
	if n == 0 {
		return Estimate{}
	}
	const z = 1.959963984540054
	p, nf := float64(c)/float64(n), float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return Estimate{Value: p, Low: math.Max(0, mid-half), High: math.Min(1, mid+half)}
}

// Render writes the page for d to w.
func Render(w io.Writer, d *Data) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("evalreport: %w", err)
	}
	// json.Marshal escapes <, > and &, so no "</script>" can end the
	// block early; the block is data, never run.
	return page.Execute(w, map[string]any{
		"Title": "trio eval " + d.Suite,
		"CSS":   template.CSS(pageCSS),
		"JS":    template.JS(pageJS),
		"Data":  template.JS(data),
	})
}

// WriteFile renders the eval output folder out into the file page
// (out/report.html when page is "") and returns its path.
func WriteFile(out, page string) (string, error) {
	if page == "" {
		page = filepath.Join(out, FileName)
	}
	page, err := filepath.Abs(page)
	if err != nil {
		return "", fmt.Errorf("evalreport: %w", err)
	}
	d, err := Load(out, page)
	if err != nil {
		return "", err
	}
	tmp := page + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("evalreport: %w", err)
	}
	if err := Render(f, d); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("evalreport: %w", err)
	}
	if err := os.Rename(tmp, page); err != nil {
		return "", fmt.Errorf("evalreport: %w", err)
	}
	return page, nil
}
