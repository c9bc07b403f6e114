package sandbox

import (
	_ "embed"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/goccy/go-yaml"
	"golang.org/x/sys/unix"
)

//go:embed trustedgo.yaml
var trustedGoYAML []byte

type trustedGoTable struct {
	Commands         []string `yaml:"commands"`
	UnhashedIncludes []string `yaml:"unhashed_includes"`
	Flags            map[string]struct {
		Value bool `yaml:"value"`
	} `yaml:"flags"`
}

var trustedGo = sync.OnceValues(func() (trustedGoTable, error) {
	var t trustedGoTable
	if err := yaml.UnmarshalWithOptions(trustedGoYAML, &t, yaml.Strict()); err != nil {
		return t, fmt.Errorf("sandbox: trustedgo.yaml: %w", err)
	}
	return t, nil
})

// TrustedGo reports whether argv may run as a trusted build: the go
// command (by that name, found on the sandbox's read-only PATH) with a
// subcommand that the table trustedgo.yaml knows, with only the flags it
// lists (whatever follows -args is the test binaries' and may be
// anything). Such a command runs nothing of the workspace's as the go
// command: what it compiles is the toolchain's work, and a sandbox runs
// the programs it builds (test binaries, through -exec) confined further,
// where they cannot reach the go command, its work folder or the build
// cache. So the build cache such commands write may be shared with the
// Critic's checks: it holds what the toolchain built from the workspace's
// sources. The results of the tests it also holds are never used by a
// check (CheckEnv's -count=1): a test binary may read inputs go test does
// not record, so a result cached for one state of the workspace can stand
// for another.
//
// Only argv is judged; the sandbox gives the command its own environment.
// An argument that starts with a dash and is not listed, or a flag whose
// value is missing or looks like a flag, makes the command an ordinary
// one.
func TrustedGo(argv []string) bool {
	t, err := trustedGo()
	if err != nil || len(argv) < 2 || argv[0] != "go" || !slices.Contains(t.Commands, argv[1]) {
		return false
	}
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		if a == "-args" || a == "--args" {
			return true // the rest is the test binaries'
		}
		if !strings.HasPrefix(a, "-") {
			continue // a package
		}
		bare := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(bare, "=")
		f, ok := t.Flags[name]
		if !ok || len(a)-len(bare) > 2 {
			return false
		}
		if f.Value && !hasValue {
			if i+1 == len(argv) || strings.HasPrefix(argv[i+1], "-") {
				return false
			}
			i++
		}
	}
	return true
}

// maxTrustedFiles bounds the walk of TrustedGoWorkspace: a workspace with
// more files has no trusted builds rather than a slow check before every
// go command.
const maxTrustedFiles = 20000

// TrustedGoWorkspace reports whether the go command hashes everything it
// compiles in the workspace at root: no file has one of the table's
// unhashed_includes extensions (nor does a symlink's target), no .go file
// imports "C" and no symlink names a folder. No folder is left out: the
// go command leaves testdata, _ and . folders out of ./... but compiles
// them when a replace line, a go.work or an import names them. (Paths
// outside the workspace a replace could name are read-only to every
// command, or empty when it starts: /tmp and HOME.) Without that a trusted build could store
// a package compiled from a header the Worker changes afterwards, and the
// Critic would reuse it. Nothing may write the workspace while it runs.
//
// The walk also re-dates every file and folder whose modification time
// is not its change time (see redate): the go command knows the files a
// test opened by size and modification time, and a command can set the
// latter back after changing a file.
func TrustedGoWorkspace(root string) bool {
	t, err := trustedGo()
	if err != nil {
		return false
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	n, ok := 0, true
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.Type()&fs.ModeSymlink != 0 {
			// The go command follows a symlinked source file, and a
			// symlinked folder named as a package: judge what it names.
			// One that dangles here, or leads out of the workspace, may
			// name something else in the sandbox (/workspace/...): no
			// trusted builds then, nor for a link named as a source.
			target, err := filepath.EvalSymlinks(p)
			rel, rerr := filepath.Rel(realRoot, target)
			if err != nil || rerr != nil || !filepath.IsLocal(rel) || slices.Contains(t.UnhashedIncludes, filepath.Ext(name)) {
				ok = false
				return filepath.SkipAll
			}
			if st, err := os.Stat(target); err != nil || st.IsDir() || slices.Contains(t.UnhashedIncludes, filepath.Ext(target)) {
				ok = false
				return filepath.SkipAll
			}
		} else if d.IsDir() {
			return redate(p, d)
		} else if !d.Type().IsRegular() {
			return nil
		}
		if err := redate(p, d); err != nil {
			return err
		}
		if n++; n > maxTrustedFiles || slices.Contains(t.UnhashedIncludes, filepath.Ext(name)) {
			ok = false
			return filepath.SkipAll
		}
		if filepath.Ext(name) == ".go" {
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return nil // the go command reports it
			}
			for _, imp := range f.Imports {
				if imp.Path.Value == `"C"` {
					ok = false
					return filepath.SkipAll
				}
			}
		}
		return nil
	})
	return ok && err == nil
}

// redate sets the modification time of the file or folder at p to now
// when it differs from its change time. A write sets both alike; a
// command that changed a file and then set its modification time back
// (touch -d) could not set the change time, so the file gets a time the
// go command has not seen, and a test result that read it is not reused.
// Setting it sets both again, so a file is re-dated once.
func redate(p string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return nil // gone: the go command sees the same
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Mtim == st.Ctim {
		return nil
	}
	// UTIME_NOW, not a time of ours: the kernel then sets the change
	// time to the same instant.
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_NOW}}, unix.AT_SYMLINK_NOFOLLOW)
}
