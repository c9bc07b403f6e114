package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup is the container's cgroup as the host sees it: where its
// processes are listed and how it is frozen (v1 freezer or v2
// cgroup.freeze). Found from init's /proc/<pid>/cgroup.
type cgroup struct {
	procs  string // file listing every process of the container
	freeze string // freezer.state (v1) or cgroup.freeze (v2); "" if none
	oom    string // memory.oom_control (v1) or memory.events (v2); "" if unknown
	v2     bool
}

// cgroupOf finds the cgroup of the process pid.
func cgroupOf(pid int) (*cgroup, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	var v1Freezer, v1Pids, v1Memory, v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case hasController(parts[1], "freezer"):
			v1Freezer = parts[2]
		case hasController(parts[1], "pids"):
			v1Pids = parts[2]
		case hasController(parts[1], "memory"):
			v1Memory = parts[2]
		}
	}
	const base = "/sys/fs/cgroup"
	var cg *cgroup
	switch {
	case v1Freezer != "" && v1Freezer != "/":
		dir := filepath.Join(base, "freezer", v1Freezer)
		cg = &cgroup{procs: filepath.Join(dir, "cgroup.procs"), freeze: filepath.Join(dir, "freezer.state")}
	case v1Pids != "" && v1Pids != "/":
		cg = &cgroup{procs: filepath.Join(base, "pids", v1Pids, "cgroup.procs")}
	case v2 != "" && v2 != "/":
		dir := filepath.Join(base, v2)
		cg = &cgroup{procs: filepath.Join(dir, "cgroup.procs"), oom: filepath.Join(dir, "memory.events"), v2: true}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.freeze")); err == nil {
			cg.freeze = filepath.Join(dir, "cgroup.freeze")
		}
	}
	if cg != nil {
		if v1Memory != "" && v1Memory != "/" {
			cg.oom = filepath.Join(base, "memory", v1Memory, "memory.oom_control")
		}
		return cg, nil
	}
	return nil, fmt.Errorf("no cgroup of its own for pid %d", pid)
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// oomKills is the cgroup's count of OOM kills ("oom_kill N" in both v1's
// memory.oom_control and v2's memory.events), read straight from the file.
func (cg *cgroup) oomKills() (uint64, bool) {
	if cg.oom == "" {
		return 0, false
	}
	b, err := os.ReadFile(cg.oom)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// pids lists the container's processes.
func (cg *cgroup) pids() ([]int, error) {
	b, err := os.ReadFile(cg.procs)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// setFrozen freezes or thaws the cgroup, waiting (briefly) until a v1
// freezer says FROZEN. Without a freezer it does nothing.
func (cg *cgroup) setFrozen(frozen bool) error {
	if cg.freeze == "" {
		return nil
	}
	val := "THAWED"
	if cg.v2 {
		val = "0"
	}
	if frozen {
		val = "FROZEN"
		if cg.v2 {
			val = "1"
		}
	}
	if err := os.WriteFile(cg.freeze, []byte(val), 0); err != nil {
		return err
	}
	if !frozen || cg.v2 {
		return nil
	}
	for range 200 {
		b, err := os.ReadFile(cg.freeze)
		if err != nil || strings.TrimSpace(string(b)) == "FROZEN" {
			return err
		}
		time.Sleep(500 * time.Microsecond)
	}
	return errors.New("freezer did not reach FROZEN")
}

// procInfo is what the reaper needs of a process: its real uid and whether
// it is dead, waiting only for its parent to reap it: a zombie leader whose
// other threads still run (it called exit, not exit_group) is alive.
func procInfo(pid int) (uid int, dead, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false, false
	}
	uid = -1
	zombie, threads := false, 1
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "State:"); found {
			zombie = strings.Contains(v, "Z") || strings.Contains(v, "X")
		}
		if v, found := strings.CutPrefix(line, "Threads:"); found {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, found := strings.CutPrefix(line, "Uid:"); found {
			if fs := strings.Fields(v); len(fs) > 0 {
				uid, _ = strconv.Atoi(fs[0])
			}
		}
	}
	return uid, zombie && threads <= 1, uid >= 0
}

// reapTimeout bounds how long reap waits for the container to hold only
// its init processes.
const reapTimeout = 5 * time.Second

// reap kills, from the host, every process in the container but init and
// its FIFO reader (known by pid since the container started), and waits
// until none is left but the dead. The cgroup is frozen while it signals,
// so nothing forks away between the listing and the kill.
func (s *Sandbox) reap(ctx context.Context) error {
	deadline := time.Now().Add(reapTimeout)
	for round := 0; ; round++ {
		pids, err := s.listPids(ctx)
		if err != nil {
			if os.IsNotExist(err) {
				return nil // the container is gone: nothing to reap
			}
			return fmt.Errorf("list container processes: %w", err)
		}
		var victims []int
		for _, pid := range pids {
			if s.initPids[pid] {
				continue
			}
			if _, dead, ok := procInfo(pid); ok && !dead {
				victims = append(victims, pid)
			}
		}
		if len(victims) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes survive SIGKILL in the container", len(victims))
		}
		frozen := s.cg != nil && s.cg.setFrozen(true) == nil
		for _, pid := range victims {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if frozen {
			s.cg.setFrozen(false)
		}
		time.Sleep(time.Duration(min(round, 20)) * 250 * time.Microsecond)
	}
}

// protectInit keeps the kernel's OOM killer off init (and the shell init's
// FIFO reader):
// a command that exhausts the memory limit is killed, the container is not.
// Lowering oom_score_adj needs privilege, so it is done from here; runc
// 1.1 fails to start a container whose spec asks for -1000. The reader is
// forked by init just after start, so this waits for it.
//
// It also records init's pids, the only ones the reaper spares: no command
// has run in b yet, so the processes of init's uid there now are init's.
func (s *Sandbox) protectInit(ctx context.Context, b *box) {
	b.initPids = map[int]bool{}
	for range 4000 {
		pids, err := b.listPids(ctx)
		if err != nil {
			return
		}
		for _, pid := range pids {
			if uid, _, ok := procInfo(pid); ok && uid == int(s.initUID) && !b.initPids[pid] {
				b.initPids[pid] = true
				os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("-1000"), 0)
			}
		}
		want := 2 // the shell and cat
		if b.execd != nil {
			want = 1 // the exec server alone
		}
		if len(b.initPids) >= want {
			return
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// listPids lists the processes of b's container: from its cgroup, else
// through containerd.
func (b *box) listPids(ctx context.Context) ([]int, error) {
	if b.cg != nil {
		return b.cg.pids()
	}
	ps, err := b.task.Pids(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p.Pid)
	}
	return out, nil
}
