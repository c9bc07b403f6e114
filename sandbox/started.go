package sandbox

import (
	"errors"
	"sync"
)

// Started is a sandbox's set of started processes not yet stopped, for
// its Close; a Starter adds each process it starts and the process
// removes itself when it stops. The zero value is an empty set.
type Started struct {
	mu    sync.Mutex
	procs map[Process]bool
}

// Add puts p in the set.
func (s *Started) Add(p Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.procs == nil {
		s.procs = map[Process]bool{}
	}
	s.procs[p] = true
}

// Remove takes p out of the set.
func (s *Started) Remove(p Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.procs, p)
}

// Len is how many processes are in the set.
func (s *Started) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.procs)
}

// StopAll stops every process in the set (Stop removes each) and joins
// their errors.
func (s *Started) StopAll() error {
	s.mu.Lock()
	ps := make([]Process, 0, len(s.procs))
	for p := range s.procs {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Stop())
	}
	return errors.Join(errs...)
}
