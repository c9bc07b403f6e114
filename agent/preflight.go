package agent

import (
	"fmt"
	"os"
)

// checkWritable makes sure a file can be created, written, synced and
// removed in dir, before any model is asked: a read-only workspace found
// only when the Critic restores its suite would cost the Planner's and
// the test designer's calls and end as a model or sandbox error. The
// probe is a hidden file removed at once; a full disk usually fails its
// sync.
func checkWritable(dir, what string) error {
	f, err := os.CreateTemp(dir, ".trio-probe-*")
	if err != nil {
		return invalidInput(fmt.Errorf("agent: the %s %s is not writable: %w", what, dir, err))
	}
	name := f.Name()
	defer os.Remove(name)
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return invalidInput(fmt.Errorf("agent: the %s %s cannot be written: %w", what, dir, err))
	}
	return nil
}
