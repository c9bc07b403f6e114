package sandbox

import (
	"io/fs"
	"os"
	"syscall"
)

// minEntryCost is what an entry counts for at least.
const minEntryCost = 4096

// DiskUsage is the space allocated to the files and folders under dir,
// each inode counted once, without following symlinks: allocated blocks,
// not apparent sizes (a sparse file costs what it holds), and at least a
// block an entry, so that a million empty files count too. Entries that
// vanish during the walk are skipped. It only reads.
func DiskUsage(dir string) int64 {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0
	}
	defer root.Close()
	seen := map[uint64]bool{}
	var total int64
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += max(st.Blocks*512, minEntryCost)
		return nil
	})
	return total
}
