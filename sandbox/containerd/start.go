package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"golang.org/x/sys/unix"

	"github.com/trioagent/trio/sandbox"
	"github.com/trioagent/trio/sandbox/containerd/internal/execd"
)

var _ sandbox.Starter = (*Sandbox)(nil)

// errNoExecServer is Start's error where the containers' init cannot be
// Trio's exec server (see newExecServer).
var errNoExecServer = errors.New("starting a long-lived process needs Trio's exec server as the container's init, " +
	"and this executable cannot be it (an image root needs a statically linked trio)")

// Start runs cmd in a container of its own, a sibling of the run's: the
// same root, mounts and path rules (planned from the workspace now), the
// same user, limits (its own cgroup with the run's memory, CPU and pids
// limits), network and disk limit, and its own exec server as init, which
// starts cmd with stdin and stdout on pipes to this process and no
// timeout. Its /tmp, HOME and build cache are its own, so Reset's promise
// (nothing an earlier command left reaches the Critic's checks) holds.
// Commands Exec runs are in another pid namespace: the reaper after each
// of them, a kill -9 -1 and Reset do not reach it, and it cannot signal or
// trace them.
//
// When cmd's process exits, or is killed (Stop, Close, the disk limit),
// the sibling container is removed with whatever else runs in it. A dead
// run's siblings carry its labels, so the next sandbox's sweep (and
// Prune) removes them too.
func (s *Sandbox) Start(ctx context.Context, cmd sandbox.Command) (sandbox.Process, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, sandbox.ErrEmptyCommand
	}
	cwd, err := workdir(cmd.Dir)
	if err != nil {
		return nil, err
	}
	if s.exe == "" {
		return nil, fmt.Errorf("containerd sandbox: start %s: %w", cmd.Argv[0], errNoExecServer)
	}
	// Serialised with commands: the layout is planned, and a lent
	// workspace adopted, while no command runs.
	s.execMu.Lock()
	defer s.execMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, sandbox.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("containerd sandbox: start %s: %w", cmd.Argv[0], err)
	}
	// Other started processes must not race the plan and the mounts.
	thaw, err := s.freezeStarted()
	if err != nil {
		return nil, fmt.Errorf("containerd sandbox: start %s: %w", cmd.Argv[0], err)
	}
	defer thaw()
	layout, err := s.planLayout()
	if err == nil {
		err = layout.CheckSize()
	}
	if err != nil {
		return nil, fmt.Errorf("containerd sandbox: start %s: %w", cmd.Argv[0], err)
	}
	if s.overDisk() {
		return nil, fmt.Errorf("containerd sandbox: start %s: the run has already written %d MiB, past limits.disk (%d MiB)",
			cmd.Argv[0], s.written()>>20, s.cfg.Limits.Disk>>20)
	}
	if s.adopt {
		if err := adoptTree(s.cfg.Workspace, int(s.uid), int(s.gid), s.cfg.PathRules); err != nil {
			return nil, fmt.Errorf("containerd sandbox: start %s: workspace ownership: %w", cmd.Argv[0], err)
		}
	}
	n := strconv.FormatInt(s.starts.Add(1), 10)
	p := &process{
		s:      s,
		layout: layout,
		id:     s.ID() + "-p" + n,
		dir:    filepath.Join(s.procsDir(), n),
		stderr: sandbox.NewTail(s.cfg.Limits.Output),
		done:   make(chan struct{}),
	}
	if err := p.start(ctx, cmd, cwd, layout); err != nil {
		p.remove()
		p.release()
		return nil, fmt.Errorf("containerd sandbox: start %s: %w%s", cmd.Argv[0], err, p.initSaid())
	}
	s.mu.Lock()
	if s.procs == nil {
		s.procs = map[*process]bool{}
	}
	s.procs[p] = true
	s.mu.Unlock()
	return p, nil
}

// procsDir holds, in the run's state folder, one folder per started
// process: its cache, its exec server's socket, its init's log.
func (s *Sandbox) procsDir() string { return filepath.Join(s.stateDir, "procs") }

// workdir is a command's working folder in the container.
func workdir(dir string) (string, error) {
	if dir == "" || dir == "." {
		return WorkspaceDir, nil
	}
	if !filepath.IsLocal(dir) {
		return "", fmt.Errorf("containerd sandbox: dir %q: %w", dir, sandbox.ErrOutsideWorkspace)
	}
	return path.Join(WorkspaceDir, filepath.ToSlash(dir)), nil
}

// process is a started process and its sibling container.
type process struct {
	s     *Sandbox
	id    string // the sibling container's
	dir   string // its folder in the run's state
	execd *execServer
	// layout is the path rules' layout it started with: what they hide
	// and appeared since is removed when it stops, as after a command.
	layout sandbox.Layout

	container client.Container
	initPid   int
	cg        *cgroup
	oomBefore uint64
	conn      *net.UnixConn
	stdin     *os.File
	stdout    *os.File
	stderr    *sandbox.Tail
	began     time.Time
	stopDisk  func() bool

	removeOnce sync.Once
	removeErr  error
	done       chan struct{} // closed when it has ended; res is set then
	res        sandbox.Result
	stopOnce   sync.Once
	stopErr    error
}

func (p *process) start(ctx context.Context, cmd sandbox.Command, cwd string, layout sandbox.Layout) error {
	s := p.s
	cache, gocache := filepath.Join(p.dir, "cache"), filepath.Join(p.dir, "gocache")
	for _, d := range []string{cache, filepath.Join(gocache, "upper"), filepath.Join(gocache, "work")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, d := range []string{cache, filepath.Join(gocache, "upper")} {
		if err := os.Lchown(d, int(s.uid), int(s.gid)); err != nil {
			return err
		}
	}
	var err error
	if p.execd, err = ctlServer(s.exe, filepath.Join(p.dir, "ctl"), s.initUID); err != nil {
		return fmt.Errorf("exec server: %w", err)
	}
	// Container calls use the sandbox's context, bounded: a cancelled ctx
	// must not leave a half-made container behind.
	cctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	opts, err := s.containerOpts(cctx, p.id, p.execd.args(), parts{execd: p.execd, cache: cache, gocache: gocache, layout: layout})
	if err != nil {
		return err
	}
	if p.container, err = s.client.NewContainer(cctx, p.id, opts...); err != nil {
		return fmt.Errorf("create container %s: %w", p.id, err)
	}
	task, err := p.container.NewTask(cctx, cio.LogFile(filepath.Join(p.dir, "init.log")))
	if err != nil {
		return fmt.Errorf("create task %s: %w", p.id, err)
	}
	if err := task.Start(cctx); err != nil {
		return fmt.Errorf("start task %s: %w", p.id, err)
	}
	p.initPid = int(task.Pid())
	// As protectInit does for the run's container: the kernel's OOM
	// killer takes the process, not the exec server.
	os.WriteFile("/proc/"+strconv.Itoa(p.initPid)+"/oom_score_adj", []byte("-1000"), 0)
	p.cg, _ = cgroupOf(p.initPid)
	if p.conn, err = p.execd.dial(func() bool { return pidAlive(p.initPid) }); err != nil {
		return err
	}
	inR, inW, err := pipeIn()
	if err != nil {
		return err
	}
	p.stdin = inW
	outR, outW, err := pipe()
	if err != nil {
		unix.Close(inR)
		return err
	}
	p.stdout = outR
	errR, errW, err := pipe()
	if err != nil {
		unix.Close(inR)
		unix.Close(outW)
		return err
	}
	req := execd.Request{Argv: cmd.Argv, Env: sandbox.MergeEnv(s.env, cmd.Env), Dir: cwd, UID: s.uid, GID: s.gid}
	p.conn.SetDeadline(time.Now().Add(startTimeout))
	err = execd.WriteRequestStdin(p.conn, req, inR, outW, errW)
	unix.Close(inR)
	unix.Close(outW)
	unix.Close(errW)
	go func() { io.Copy(p.stderr, errR); errR.Close() }()
	if err != nil {
		return fmt.Errorf("the exec server: %w", err)
	}
	dec := json.NewDecoder(p.conn)
	var first execd.Reply
	if err := dec.Decode(&first); err != nil {
		return fmt.Errorf("the exec server: %w", err)
	}
	if !first.Started {
		return errors.New(first.Error)
	}
	p.conn.SetDeadline(time.Time{})
	p.began = time.Now()
	if p.cg != nil {
		p.oomBefore, _ = p.cg.oomKills()
	}
	p.stopDisk = s.watchDisk(func() { p.remove() })
	go p.waitExit(dec)
	return nil
}

// waitExit waits for the exec server's word that the process ended, then
// removes the container (and whatever the process left running in it).
func (p *process) waitExit(dec *json.Decoder) {
	var last execd.Reply
	err := dec.Decode(&last)
	res := sandbox.Result{Duration: time.Since(p.began), ExitCode: last.Status}
	if err != nil || !last.Exited || last.Signaled {
		// Without a last reply, the exec server died: the container was
		// removed (Stop, Close, the disk limit) and the process with it.
		res.ExitCode = -1
	}
	if p.cg != nil {
		if n, ok := p.cg.oomKills(); ok && n > p.oomBefore {
			res.OOMKilled = true
		}
	}
	res.DiskExceeded = p.stopDisk() || (last.Signaled && last.Status == 128+int(syscall.SIGXFSZ))
	p.remove()
	p.conn.Close()
	p.res = res
	close(p.done)
}

// remove kills and deletes the sibling container, once.
func (p *process) remove() error {
	p.removeOnce.Do(func() {
		if p.container == nil {
			return
		}
		ctx, cancel := context.WithTimeout(p.s.ctx, 30*time.Second)
		defer cancel()
		p.removeErr = removeContainer(ctx, p.container)
	})
	return p.removeErr
}

// release frees what is left once the container is gone: the pipes, the
// socket's folder, the process's folder in the run's state.
func (p *process) release() {
	for _, f := range []*os.File{p.stdin, p.stdout} {
		if f != nil {
			f.Close()
		}
	}
	if p.conn != nil {
		p.conn.Close()
	}
	p.execd.close()
	os.RemoveAll(p.dir)
}

// initSaid is the end of the sibling's init log, for an error message.
func (p *process) initSaid() string {
	if p.initPid > 0 && pidAlive(p.initPid) {
		return ""
	}
	return said(filepath.Join(p.dir, "init.log"))
}

func (p *process) Stdin() io.WriteCloser { return p.stdin }
func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() string        { return p.stderr.String() }

func (p *process) Wait() (sandbox.Result, error) {
	<-p.done
	return p.res, nil
}

// Stop removes the sibling container, which kills the process and all it
// started (the pid namespace ends with its init), waits for the exit to
// be seen, and frees the pipes. Then, as after a command, what the path
// rules hide and appeared in the workspace while it ran (a .git with a
// hostile config) is removed.
func (p *process) Stop() error {
	p.stopOnce.Do(func() {
		if err := p.remove(); err != nil {
			p.stopErr = fmt.Errorf("containerd sandbox: stop %s: %w", p.id, err)
			// The exit may never be reported: stop waiting for it.
			p.conn.Close()
		}
		<-p.done
		p.release()
		if rules := p.s.cfg.PathRules; rules != nil {
			// A .git with a hostile config it wrote would act on the host.
			removed, err := sandbox.RemoveNewHidden(p.s.cfg.Workspace, rules, p.layout)
			if err != nil {
				p.stopErr = errors.Join(p.stopErr, fmt.Errorf("containerd sandbox: after %s: %w", p.id, err))
			}
			sandbox.NoteRemoved(p.stderr, removed)
		}
		p.s.mu.Lock()
		delete(p.s.procs, p)
		p.s.mu.Unlock()
	})
	return p.stopErr
}

// stopAll stops every started process (Close).
func (s *Sandbox) stopAll() error {
	s.mu.Lock()
	ps := make([]*process, 0, len(s.procs))
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

// pidAlive reports whether pid runs and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	_, zombie, ok := procInfo(pid)
	return ok && !zombie
}

// pipeIn makes a pipe whose write end this process polls and whose read
// end, left blocking, goes to a command as its stdin.
func pipeIn() (int, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, nil, err
	}
	if err := unix.SetNonblock(p[1], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return -1, nil, err
	}
	return p[0], os.NewFile(uintptr(p[1]), "|"+strconv.Itoa(p[1])), nil
}

// freezeStarted freezes every started process's cgroup, and thaw thaws
// them. Commands and Start call it while they plan the path rules' layout,
// mount it and adopt a lent workspace: a started process must not swap a
// planned folder for a symlink between the plan and the mount (runc
// follows a bind's source on the host, so the symlink's target would be
// bound into the container) nor race the ownership walk. Callers hold
// execMu, so no process is started meanwhile.
func (s *Sandbox) freezeStarted() (thaw func(), err error) {
	s.mu.Lock()
	ps := make([]*process, 0, len(s.procs))
	for p := range s.procs {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	var frozen []*cgroup
	thaw = func() {
		for _, cg := range frozen {
			cg.setFrozen(false)
		}
	}
	for _, p := range ps {
		if p.cg == nil || p.cg.freeze == "" {
			thaw()
			return nil, fmt.Errorf("started process %s cannot be frozen (its cgroup has no freezer)", p.id)
		}
		// A v1 freezer may take a while to catch a process that keeps
		// forking: ask again, up to about two seconds.
		err := p.cg.setFrozen(true)
		for try := 0; err != nil && !errors.Is(err, os.ErrNotExist) && try < 20; try++ {
			err = p.cg.setFrozen(true)
		}
		if err == nil && p.cg.v2 {
			err = waitFrozen(p.cg)
		}
		if errors.Is(err, os.ErrNotExist) {
			continue // it ended, and its container is gone
		}
		frozen = append(frozen, p.cg)
		if err != nil {
			thaw()
			return nil, fmt.Errorf("freeze started process %s: %w", p.id, err)
		}
	}
	return thaw, nil
}

// waitFrozen waits until a v2 cgroup says it is frozen.
func waitFrozen(cg *cgroup) error {
	events := filepath.Join(filepath.Dir(cg.freeze), "cgroup.events")
	for range 4000 {
		b, err := os.ReadFile(events)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l == "frozen 1" {
				return nil
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	return errors.New("cgroup did not freeze")
}
