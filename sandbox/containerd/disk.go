package containerd

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// diskPoll is how often a running command's writes are measured against
// Limits.Disk. At the write rates seen here (about 1 GiB/s at most) a
// command can overshoot the limit by one interval's writes before it is
// killed; RLIMIT_FSIZE bounds any single file at the limit regardless.
const diskPoll = 100 * time.Millisecond

// usage is the space the files under dir take (allocated blocks), without
// following symlinks. Entries that vanish during the walk are skipped.
func usage(dir string) int64 {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0
	}
	defer root.Close()
	var total int64
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		}
		return nil
	})
	return total
}

// written is what the run has added to the host's disk: the workspace's
// growth since the sandbox opened plus the cache folder.
func (s *Sandbox) written() int64 {
	return usage(s.cfg.Workspace) - s.diskBase + usage(s.cacheDir()) + usage(filepath.Join(s.stateDir, "gocache"))
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
		t := time.NewTicker(diskPoll)
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
			}
		}
	}()
	return func() bool {
		close(done)
		return <-hit
	}
}
