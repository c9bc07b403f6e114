package containerd

import (
	"context"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/typeurl/v2"
)

// oomKills is b's container's count of OOM kills (cgroup v1 oom_control or
// v2 memory.events), or 0 when unknown: from the cgroup's file when this
// process can read it, else through containerd's metrics.
func (b *box) oomKills(ctx context.Context) uint64 {
	if b.cg != nil {
		if n, ok := b.cg.oomKills(); ok {
			return n
		}
	}
	m, err := b.task.Metrics(ctx)
	if err != nil || m == nil || m.Data == nil {
		return 0
	}
	v, err := typeurl.UnmarshalAny(m.Data)
	if err != nil {
		return 0
	}
	switch m := v.(type) {
	case *v1.Metrics:
		if c := m.GetMemoryOomControl(); c != nil {
			return c.OomKill
		}
	case *v2.Metrics:
		if e := m.GetMemoryEvents(); e != nil {
			return e.OomKill
		}
	}
	return 0
}
