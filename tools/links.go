package tools

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/trioagent/trio/policy"
)

// maxGlobEntries bounds how many folder entries Links.Glob reads for one
// glob; a glob that reaches further is judged unjudgeable (denied).
const maxGlobEntries = 10000

// Links returns what the policy needs to judge command arguments by what
// they reach on disk: where a workspace path leads through its symlinks
// (etc -> /etc, envlnk -> .env, dep -> vendor) and what a shell glob
// matches through them. run_command and run_tests put it on their exec
// effects; the policy itself never touches the file system.
func (ws *Workspace) Links() policy.Links { return ws.links() }

func (ws *Workspace) links() *workspaceLinks { return &workspaceLinks{ws: ws} }

// workspaceLinks answers the policy and remembers its answers, so that a
// command can make sure, just before it runs, that no symlink it was
// judged by changed meanwhile (while a person was asked, say).
type workspaceLinks struct {
	ws *Workspace

	mu       sync.Mutex
	resolved map[string]answer
	globbed  map[string]answer
}

type answer struct {
	targets []string
	ok      bool
}

// Resolve follows rel's symlinks (see Workspace.follow). A path asked
// about again gets the same answer: one judgement sees one file system.
func (l *workspaceLinks) Resolve(rel string) (string, bool) {
	if a, ok := l.recall(&l.resolved, rel); ok {
		return a.targets[0], a.ok
	}
	t, ok := l.ws.follow(rel)
	l.remember(&l.resolved, rel, answer{[]string{t}, ok})
	return t, ok
}

// Glob expands a shell glob over the workspace as sh would (a leading "."
// only by a literal "."), and returns where each match that passes
// through a symlink leads. Matches without one are the policy's to judge
// by the glob's text.
func (l *workspaceLinks) Glob(pattern string) ([]string, bool) {
	if a, ok := l.recall(&l.globbed, pattern); ok {
		return a.targets, a.ok
	}
	ts, ok := l.ws.globLinks(pattern)
	l.remember(&l.globbed, pattern, answer{ts, ok})
	return ts, ok
}

func (l *workspaceLinks) recall(m *map[string]answer, key string) (answer, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := (*m)[key]
	return a, ok
}

func (l *workspaceLinks) remember(m *map[string]answer, key string, a answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if *m == nil {
		*m = make(map[string]answer)
	}
	(*m)[key] = a
}

// policy returns l as policy.Links: nil when l is (a nil pointer in an
// interface would not read as "no links").
func (l *workspaceLinks) policy() policy.Links {
	if l == nil {
		return nil
	}
	return l
}

// changed returns a path or glob whose answer differs now from the one the
// policy judged by; ok is false when none does.
func (l *workspaceLinks) changed() (string, bool) {
	if l == nil {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for rel, a := range l.resolved {
		if t, ok := l.ws.follow(rel); ok != a.ok || t != a.targets[0] {
			return rel, true
		}
	}
	for pattern, a := range l.globbed {
		ts, ok := l.ws.globLinks(pattern)
		if ok != a.ok || !slices.Equal(ts, a.targets) {
			return pattern, true
		}
	}
	return "", false
}

// globLinks is Links' Glob.
func (ws *Workspace) globLinks(pattern string) ([]string, bool) {
	type at struct {
		real   string // a folder inside the workspace, links followed
		linked bool   // a symlink was followed on the way
	}
	segs := strings.Split(pattern, "/")
	cur := []at{{real: "."}}
	var out []string
	read := 0
	for i, seg := range segs {
		last := i == len(segs)-1
		var next []at
		for _, d := range cur {
			names := []string{seg}
			if strings.ContainsAny(seg, "*?[") {
				entries, err := fs.ReadDir(ws.Root.FS(), d.real)
				if err != nil {
					continue // not a folder, or gone: the glob matches nothing here
				}
				if read += len(entries); read > maxGlobEntries {
					return nil, false
				}
				names = names[:0]
				for _, e := range entries {
					if shellMatch(seg, e.Name()) {
						names = append(names, e.Name())
					}
				}
			}
			for _, name := range names {
				p := path.Join(d.real, name)
				st, err := ws.Root.Lstat(p)
				if err != nil {
					continue
				}
				linked := d.linked
				if st.Mode()&fs.ModeSymlink != 0 {
					t, ok := ws.follow(p)
					if !ok {
						return nil, false
					}
					if path.IsAbs(t) {
						out = append(out, t) // outside: nothing below it is the workspace's
						continue
					}
					p, linked = t, true
					if !last {
						if st, err = ws.Root.Stat(p); err != nil {
							continue
						}
					}
				}
				switch {
				case last && linked:
					out = append(out, p)
				case !last && st.IsDir():
					next = append(next, at{real: p, linked: linked})
				}
			}
		}
		cur = next
	}
	return out, true
}

// shellMatch matches one name against one segment of a shell glob: "*"
// and "?" never match a leading "." (sh's rule), and "[!...]" negates. A
// malformed pattern matches every name, which errs towards judging more.
func shellMatch(pattern, name string) bool {
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(pattern, ".") {
		return false
	}
	ok, err := path.Match(strings.ReplaceAll(pattern, "[!", "[^"), name)
	return ok || err != nil
}
