package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"

	"github.com/trioagent/trio/sandbox"
)

// box is one of the run's containers and what is its own: a folder in the
// run's state with its cache, the writable layers of its Go build cache
// overlay, its exec server's socket and its init's log; the layout its
// mounts follow; its task, init and cgroup. Commands run in one box at a
// time (the sandbox's current one). A new box is a new /tmp, HOME and
// cache: Reset, an OOM kill, init's death and a new layout each move
// commands to a new box.
//
// So that moving costs no container start on the way to a command, the
// sandbox keeps a spare: a box started in the background, with the
// current box's layout, that no command has run in. The second command
// in a box starts it (a box that runs one command, as the Critic's last
// check does, needs none). The next move takes it when the layout it
// follows is still the workspace's (Layout.Equal compares each entry's
// inode too), and is otherwise discarded. Until then it holds nothing
// but its init, and no command's process can reach it: it is another
// container, with its own pid, IPC and network namespaces and mounts,
// and its own /tmp, HOME and cache folders.
//
// The first box starts with the first command, not in New: the layout
// the rules select is known only then.
type box struct {
	n      int
	dir    string
	execd  *execServer // nil: runc's exec, with the shell init
	layout sandbox.Layout

	container client.Container
	task      client.Task
	initPid   int
	initPids  map[int]bool // init and its FIFO reader: all the reaper spares
	cg        *cgroup

	cmds int // the commands that have run in it
}

// spareJob is work in the background: removing the boxes commands left
// and, when it wants one, starting a spare. done is closed when it has
// ended; box is the spare then, or nil.
type spareJob struct {
	done  chan struct{}
	wants bool
	box   *box
}

// boxesDir holds the folders of the run's boxes in its state; goneDir, the
// folders of boxes being removed, which the disk limit no longer counts.
func (s *Sandbox) boxesDir() string { return filepath.Join(s.stateDir, "box") }
func (s *Sandbox) goneDir() string  { return filepath.Join(s.stateDir, "gone") }

// newBox makes the folders of the run's next box, which will follow
// layout. The cache and the upper layer belong to the sandbox user; the
// socket's folder to init's uid.
func (s *Sandbox) newBox(layout sandbox.Layout) (*box, error) {
	s.boxes++
	b := &box{n: s.boxes, dir: filepath.Join(s.boxesDir(), strconv.Itoa(s.boxes)), layout: layout}
	for _, d := range []string{"cache", "gocache/upper", "gocache/work"} {
		if err := os.MkdirAll(filepath.Join(b.dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("sandbox state: %w", err)
		}
	}
	for _, d := range []string{"cache", "gocache/upper"} {
		if err := os.Lchown(filepath.Join(b.dir, d), int(s.uid), int(s.gid)); err != nil {
			return nil, fmt.Errorf("sandbox state: %w", err)
		}
	}
	if s.exe != "" {
		e, err := ctlServer(s.exe, filepath.Join(b.dir, "ctl"), s.initUID)
		if err != nil {
			return nil, fmt.Errorf("exec server: %w", err)
		}
		e.helper = s.helper
		b.execd = e
	}
	return b, nil
}

// id is the box's container's id: the run's for the first box.
func (s *Sandbox) boxID(b *box) string {
	if b.n == 1 {
		return s.ID()
	}
	return s.ID() + "-b" + strconv.Itoa(b.n)
}

// cacheOf is the host folder bound at CacheDir in b.
func (s *Sandbox) cacheOf(b *box) string {
	if s.cfg.goCache != "" {
		return s.cfg.goCache
	}
	return filepath.Join(b.dir, "cache")
}

// parts are what b's container has of its own.
func (s *Sandbox) partsOf(b *box) parts {
	return parts{execd: b.execd, cache: s.cacheOf(b), gocache: filepath.Join(b.dir, "gocache"), layout: b.layout}
}

// initLog is the file b's init writes its stdout and stderr to.
func (b *box) initLog() string { return filepath.Join(b.dir, "init.log") }

// startBox creates and starts b's container. It reads only what New set,
// so the spare's job may run it beside a command.
func (s *Sandbox) startBox(ctx context.Context, b *box) error {
	id := s.boxID(b)
	args := initArgs
	if b.execd != nil {
		args = b.execd.args()
	}
	opts, err := s.containerOpts(ctx, id, args, s.partsOf(b))
	if err != nil {
		return err
	}
	b.container, err = s.client.NewContainer(ctx, id, opts...)
	if err != nil {
		return fmt.Errorf("create container %s: %w", id, err)
	}
	// What init says (the exec server's reason to stop) goes to a log
	// that errors quote.
	b.task, err = b.container.NewTask(ctx, cio.LogFile(b.initLog()))
	if err != nil {
		return fmt.Errorf("create task %s: %w", id, err)
	}
	if err := b.task.Start(ctx); err != nil {
		return fmt.Errorf("start task %s: %w", id, err)
	}
	b.initPid = int(b.task.Pid())
	b.cg, _ = cgroupOf(b.initPid) // nil: reap falls back to containerd's listing
	s.protectInit(ctx, b)
	return nil
}

// removeBox removes b's container, then its folder. Its folder moves out
// of the disk limit's count first: what the commands wrote there is gone
// for them.
func (s *Sandbox) removeBox(ctx context.Context, b *box) error {
	if b == nil {
		return nil
	}
	if b.dir == "" {
		return nil // never made
	}
	dir := b.dir
	gone := filepath.Join(s.goneDir(), strconv.Itoa(b.n))
	if err := os.MkdirAll(s.goneDir(), 0o700); err == nil && os.Rename(b.dir, gone) == nil {
		dir = gone
	}
	var err error
	if b.container != nil {
		err = removeContainer(ctx, b.container)
	}
	b.execd.close()
	if rerr := os.RemoveAll(dir); err == nil && rerr != nil {
		err = fmt.Errorf("remove %s: %w", dir, rerr)
	}
	return err
}

// spareWanted reports whether this sandbox keeps a spare box: not the
// warm-up's, which never moves.
func (s *Sandbox) spareWanted() bool { return s.cfg.goCache == "" }

// background starts a job that removes old (the boxes commands have left)
// and then, with a layout, starts a spare box following it. The job
// begins when the one before it has ended, which it takes the place of.
// Callers hold execMu, and ask for a spare only when the job before
// wants none.
func (s *Sandbox) background(old []*box, layout *sandbox.Layout) {
	var next *box
	if layout != nil {
		if b, err := s.newBox(*layout); err == nil {
			next = b
		}
	}
	prev := s.spare
	job := &spareJob{done: make(chan struct{}), wants: next != nil}
	s.spare = job
	go func() {
		defer close(job.done)
		if prev != nil {
			<-prev.done
			old = append(old, prev.box) // nil: it wanted none
		}
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		for _, b := range old {
			s.removeBox(ctx, b) // the next sandbox's sweep removes a container left over
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if next == nil || closed {
			s.removeBox(ctx, next) // its folder
			return
		}
		if err := s.startBox(ctx, next); err != nil {
			s.removeBox(ctx, next)
			return
		}
		job.box = next
	}()
}

// takeSpare returns the spare when the last job started one that follows
// layout and whose init runs, waiting for the job; else nil, without
// waiting for a job that only removes boxes. A spare it does not take is
// returned in discard. Callers hold execMu.
func (s *Sandbox) takeSpare(layout sandbox.Layout) (spare, discard *box) {
	if s.spare == nil || !s.spare.wants {
		return nil, nil
	}
	b := s.settle()
	if b == nil {
		return nil, nil
	}
	if !b.layout.Equal(layout) || !pidAlive(b.initPid) {
		return nil, b
	}
	return b, nil
}

// settle waits for the background jobs to end and returns the spare the
// last one started, or nil. Callers hold execMu.
func (s *Sandbox) settle() *box {
	job := s.spare
	if job == nil {
		return nil
	}
	<-job.done
	s.spare = nil
	return job.box
}
