package containerd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/trioagent/trio/sandbox"
)

// diskPoll is how often a running command's writes are measured against
// Limits.Disk. At the write rates seen here (about 1 GiB/s at most) a
// command can overshoot the limit by one interval's writes before it is
// killed; RLIMIT_FSIZE bounds any single file at the limit regardless.
const diskPoll = 100 * time.Millisecond

// errDiskFull is prepare's word that the run is already past Limits.Disk.
var errDiskFull = errors.New("disk limit reached")

// minEntrySize is what each file, folder or link counts at least: empty
// files take no blocks but an inode each, and a run must not exhaust the
// host's inodes within its byte limit.
const minEntrySize = 4 << 10

// usage is the space the files under dir take (allocated blocks, at least
// minEntrySize an entry), without following symlinks. Entries that vanish
// during the walk are skipped.
func usage(dir string) int64 {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0
	}
	defer root.Close()
	var total int64
	sandbox.WalkRoot(root, func(_ string, info fs.FileInfo) bool {
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += max(st.Blocks*512, minEntrySize)
		}
		return true
	}, ".")
	return total
}

// written is what the run has added to the host's disk: the workspace's
// growth since the sandbox opened plus the cache folders (the boxes',
// the trusted builds, a trusted build's upper layer and each started
// process's).
func (s *Sandbox) written() int64 {
	n := usage(s.cfg.Workspace) - s.diskBase + usage(s.boxesDir()) + usage(s.trustedDir()) + usage(filepath.Join(s.gobuildDir(), "upper")) + usage(s.procsDir())
	if s.cfg.goCache != "" {
		n += usage(s.cfg.goCache)
	}
	return n
}

// overDisk reports whether the run's writes passed Limits.Disk.
func (s *Sandbox) overDisk() bool {
	return s.cfg.Limits.Disk > 0 && s.written() > s.cfg.Limits.Disk
}

// watchDisk measures the run's writes while a command runs and calls kill
// once when they pass the limit. The returned stop ends the watch and
// reports whether the limit was hit.
func (s *Sandbox) watchDisk(kill func()) (stop func() bool) {
	if s.cfg.Limits.Disk <= 0 {
		return func() bool { return false }
	}
	done := make(chan struct{})
	hit := make(chan bool, 1)
	go func() {
		// The next measure is one interval after the last one ended, so a
		// slow walk (a tree of many files) never queues up behind itself.
		t := time.NewTimer(diskPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				hit <- false
				return
			case <-t.C:
				if s.overDisk() {
					kill()
					<-done
					hit <- true
					return
				}
				t.Reset(diskPoll)
			}
		}
	}()
	return func() bool {
		close(done)
		return <-hit
	}
}
