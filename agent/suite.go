package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/trioagent/trio/critic"
)

// SuiteDir is the folder of a run folder that holds the canonical
// acceptance suite, one sub-folder per version: suite/<version>/<path>,
// each path as in the workspace. The Worker's code cannot reach it (it is
// outside the workspace unless the runs folder is put inside), so the
// Critic restores the workspace's tests folder from here on every resume.
const SuiteDir = "suite"

// suiteVersionDir is the run folder's copy of one suite version.
func (r *run) suiteVersionDir(version int) string {
	return filepath.Join(r.dir, SuiteDir, strconv.Itoa(version))
}

// saveSuite writes the Critic's canonical files of suite into the run
// folder before the checkpoint names the version: into a temporary folder
// first, each file synced, then renamed into place, so a crash leaves
// either the whole version or none of it.
func (r *run) saveSuite(suite critic.TestSuite, files []critic.SuiteFile) error {
	dst := r.suiteVersionDir(suite.Version)
	if have, err := readSuiteCopy(dst); err == nil && suite.Verify(have) == nil {
		return nil // this version is there already (a repair that changed nothing)
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("agent: keep the acceptance suite: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return fmt.Errorf("agent: keep the acceptance suite: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; a leftover otherwise
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("agent: keep the acceptance suite: %q is not a relative path", f.Path)
		}
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("agent: keep the acceptance suite: %w", err)
		}
		if err := writeFileAtomic(p, []byte(f.Content)); err != nil {
			return fmt.Errorf("agent: keep the acceptance suite: %w", err)
		}
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("agent: keep the acceptance suite: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("agent: keep the acceptance suite: %w", err)
	}
	if d, err := os.Open(parent); err == nil {
		d.Sync() // best effort, as writeFileAtomic
		d.Close()
	}
	return nil
}

// loadSuite reads the canonical files of the checkpoint's suite back from
// the run folder and checks them against the hash in state.json. A run
// folder from before the copy was kept has none: then the workspace's
// tests are adopted if they still hash to the suite, and kept from now on.
func (r *run) loadSuite(suite critic.TestSuite) ([]critic.SuiteFile, error) {
	dir := r.suiteVersionDir(suite.Version)
	files, err := readSuiteCopy(dir)
	switch {
	case err == nil:
		if err := suite.Verify(files); err != nil {
			return nil, fmt.Errorf("agent: the run folder's acceptance suite %s does not match %s: %w", dir, StateFile, err)
		}
		return files, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("agent: read the acceptance suite: %w", err)
	}
	files = files[:0]
	for _, p := range suite.Files {
		b, err := r.ws.Root.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("agent: no copy of acceptance suite version %d in %s, and the workspace's cannot be read: %w", suite.Version, dir, err)
		}
		files = append(files, critic.SuiteFile{Path: p, Content: string(b)})
	}
	if err := suite.Verify(files); err != nil {
		return nil, fmt.Errorf("agent: no copy of acceptance suite version %d in %s, and the workspace's has changed: %w", suite.Version, dir, err)
	}
	if err := r.saveSuite(suite, files); err != nil {
		return nil, err
	}
	return files, nil
}

// readSuiteCopy reads every regular file under dir as suite files;
// fs.ErrNotExist when dir is missing.
func readSuiteCopy(dir string) ([]critic.SuiteFile, error) {
	if _, err := os.Lstat(dir); err != nil {
		return nil, err
	}
	var files []critic.SuiteFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, critic.SuiteFile{Path: filepath.ToSlash(rel), Content: string(b)})
		return nil
	})
	return files, err
}

// suiteOptions are the Critic's options for the checkpoint's suite: its
// canonical files from the run folder and the changes found on an earlier
// resume that no check has reported yet.
func (r *run) suiteOptions() ([]critic.Option, error) {
	if r.st.Suite == nil {
		return nil, nil
	}
	files, err := r.loadSuite(*r.st.Suite)
	if err != nil {
		return nil, err
	}
	return []critic.Option{critic.WithSuite(*r.st.Suite), critic.WithSuiteFiles(files...), critic.WithPending(r.st.SuiteChanges...)}, nil
}

// restoreOnResume puts the canonical suite back into the workspace when a
// run resumes, so that the Worker reads (and its commands run) the real
// tests; what had changed is kept in the checkpoint until the next check
// reports it as tampering.
func (r *run) restoreOnResume() error {
	if r.st.Suite == nil || r.critic == nil {
		return nil
	}
	res, err := r.critic.RestoreSuite()
	if err != nil {
		return fmt.Errorf("agent: resume: %w", err)
	}
	r.st.SuiteChanges = r.critic.PendingChanges()
	if len(res.Changes) > 0 {
		var parts []string
		for _, ch := range res.Changes {
			parts = append(parts, ch.String())
		}
		msg := fmt.Sprintf("the acceptance tests in %s/ had changed since the last session and were restored; the next check reports it as tampering: %s",
			r.st.Suite.Dir, strings.Join(parts, "; "))
		r.trace(TraceEntry{Kind: "suite_restored", Role: RoleCritic, SuiteVersion: r.st.Suite.Version, Detail: msg})
		r.emit(Event{Kind: EventWarning, Role: RoleCritic, Message: msg})
	}
	return nil
}
