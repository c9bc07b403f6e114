package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LockFile is the run folder's lock: a session holds an exclusive flock on
// it from start to end, and writes who it is into it.
const LockFile = "run.lock"

// workspaceLockName is the lock file of a workspace, next to it (inside it
// the Critic would take it for a stray file and the Worker could delete it):
// <parent>/.<name>.trio-lock.
func workspaceLockName(ws string) string {
	return filepath.Join(filepath.Dir(ws), "."+filepath.Base(ws)+".trio-lock")
}

// LockedError is returned (wrapping ErrLocked) when a run folder or a
// workspace is held by another session. PID and Host say who, when the
// holder wrote them.
type LockedError struct {
	// What is "run <id>" or "workspace <path>".
	What  string
	Path  string // the lock file
	PID   int
	Host  string
	RunID string
	Since time.Time
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s is in use by another process (lock %s)", e.What, e.Path)
	}
	s := fmt.Sprintf("%s is in use by pid %d on host %s", e.What, e.PID, e.Host)
	if e.RunID != "" && !strings.HasPrefix(e.What, "run ") {
		s += " (run " + e.RunID + ")"
	}
	if !e.Since.IsZero() {
		s += " since " + e.Since.Local().Format(time.DateTime)
	}
	return s + " (lock " + e.Path + ")"
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// holder is what a lock file says about the session holding it.
type holder struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	RunID string    `json:"run_id,omitempty"`
	Since time.Time `json:"since"`
}

// fileLock is an exclusive flock(2) on a lock file.
//
// The kernel drops a flock when the last descriptor of its open file goes
// away, so a process that dies (even by SIGKILL) releases its locks and a
// lock file left behind is simply taken over: it is stale only in its
// content, which the new holder rewrites. The descriptor is close-on-exec,
// so commands the run starts do not keep the lock alive after it dies.
// On NFS, Linux emulates flock with POSIX byte-range locks through the
// server's lock manager: locks then work across clients only when that
// manager runs (not with the nolock mount option, where they are local to
// one client), and a client that vanishes keeps its locks until the server
// notices. Keep run folders and workspaces on local disks.
//
// A lock file alone is defeated by deleting it: the next session creates a
// new file and locks that. So a session also holds a flock on the folder
// it locks (the run folder, the workspace), through a descriptor of the
// folder itself (dir): a folder cannot be deleted and recreated under a
// running session without the session's files going with it. The lock
// file stays for the holder's name in a second session's message.
type fileLock struct {
	f    *os.File
	path string
	dir  *os.File
}

// acquireLock takes the exclusive lock on path without waiting, creating
// the file when missing. what names the locked thing in a *LockedError.
func acquireLock(path, what, runID string) (*fileLock, error) {
	for range 5 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", what, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, lockedBy(path, what)
			}
			return nil, fmt.Errorf("lock %s: flock %s: %w", what, path, err)
		}
		// The file may have been removed or replaced between the open and
		// the flock (by a sweep, or a person); a lock on an unlinked file
		// excludes nobody, so start again on the file the path names now.
		if same(f, path) {
			l := &fileLock{f: f, path: path}
			if err := l.write(runID); err != nil {
				l.release()
				return nil, fmt.Errorf("lock %s: %w", what, err)
			}
			return l, nil
		}
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
	return nil, fmt.Errorf("lock %s: %s keeps being replaced", what, path)
}

// same reports whether the open file f is the file path names.
func same(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// write records the holder in the lock file (for the message a second
// session shows).
func (l *fileLock) write(runID string) error {
	host, _ := os.Hostname()
	b, _ := json.Marshal(holder{PID: os.Getpid(), Host: host, RunID: runID, Since: time.Now().UTC()})
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt(append(b, '\n'), 0)
	return err
}

// lockedBy reads the holder of a busy lock.
func lockedBy(path, what string) error {
	e := &LockedError{What: what, Path: path}
	b, err := os.ReadFile(path)
	var h holder
	if err == nil && json.Unmarshal(b, &h) == nil {
		e.PID, e.Host, e.RunID, e.Since = h.PID, h.Host, h.RunID, h.Since
	}
	return e
}

// acquireDirLock takes the exclusive lock on the folder dir, then on its
// lock file at path (see fileLock). A folder another session holds is a
// *LockedError naming the holder its lock file records, if it still
// exists.
func acquireDirLock(dir, path, what, runID string) (*fileLock, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, lockedBy(path, what)
		}
		return nil, fmt.Errorf("lock %s: flock %s: %w", what, dir, err)
	}
	l, err := acquireLock(path, what, runID)
	if err != nil {
		unix.Flock(int(d.Fd()), unix.LOCK_UN)
		d.Close()
		return nil, err
	}
	l.dir = d
	return l, nil
}

// release drops the lock; the file stays for the next holder (removing it
// would let a waiting process lock an unlinked file).
//
// The lock is dropped with LOCK_UN before the close: it belongs to the open
// file, which a child forked by another goroutine shares until it execs,
// so a bare close could leave it held for a moment after the session.
func (l *fileLock) release() {
	if l == nil {
		return
	}
	if l.f != nil {
		unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
	if l.dir != nil {
		unix.Flock(int(l.dir.Fd()), unix.LOCK_UN)
		l.dir.Close()
		l.dir = nil
	}
}

// locks are the locks a session holds.
type locks []*fileLock

func (ls locks) release() {
	for _, l := range ls {
		l.release()
	}
}

// lockRun locks the run folder dir for this session.
func lockRun(dir, runID string) (*fileLock, error) {
	return acquireDirLock(dir, filepath.Join(dir, LockFile), "run "+runID, runID)
}

// lockWorkspace locks the workspace ws (which exists) for a run. Its real
// path is locked, so two spellings of one folder share one lock.
func lockWorkspace(ws, runID string) (*fileLock, error) {
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, fmt.Errorf("lock workspace %s: %w", ws, err)
	}
	l, err := acquireDirLock(real, workspaceLockName(real), "workspace "+ws, runID)
	if err != nil && !errors.Is(err, ErrLocked) {
		return nil, invalidInput(fmt.Errorf("%w (the lock file goes next to the workspace, so its parent folder must be writable)", err))
	}
	return l, err
}

// isLockBusy reports whether someone holds the lock file at path, without
// taking it for long.
func isLockBusy(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	return busy(f)
}

// isDirBusy reports whether a session holds the folder dir (its lock file
// may have been deleted): for the sweep of unfinished run folders.
func isDirBusy(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	return busy(f)
}

// busy tries the lock of f, drops it at once, and closes f.
func busy(f *os.File) bool {
	defer f.Close()
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN) // see release
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
