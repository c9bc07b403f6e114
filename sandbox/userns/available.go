package userns

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Available reports whether this machine can run the sandbox with the
// bwrap executable named (default "bwrap" on $PATH): bwrap is installed
// and may make user, pid and network namespaces here. The error wraps
// ErrUnavailable and says how to fix it.
func Available(ctx context.Context, bwrap string) error {
	p, err := bwrapPath(bwrap)
	if err != nil {
		return err
	}
	return probe(ctx, p)
}

// probe makes the namespaces and mounts a command gets, and runs true.
func probe(ctx context.Context, bwrap string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	c := exec.CommandContext(ctx, bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
		"--disable-userns", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true")
	c.Env, c.Stderr = []string{}, &stderr
	if err := c.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%w: %s cannot make user namespaces here (%s); %s, start containerd, "+
			"or choose the local sandbox kind, which runs commands without isolation", ErrUnavailable, bwrap, msg, enableHint())
	}
	return nil
}

// enableHint says which kernel setting keeps unprivileged user namespaces
// off, as far as this process can read it.
func enableHint() string {
	read := func(p string) (int, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	if n, ok := read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && n == 1 {
		return "AppArmor restricts unprivileged user namespaces: allow bwrap with an AppArmor profile " +
			"(Ubuntu: see /etc/apparmor.d/bwrap-userns-restrict) or `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`"
	}
	if n, ok := read("/proc/sys/kernel/unprivileged_userns_clone"); ok && n == 0 {
		return "enable user namespaces with `sudo sysctl kernel.unprivileged_userns_clone=1`"
	}
	if n, ok := read("/proc/sys/user/max_user_namespaces"); ok && n == 0 {
		return "enable user namespaces with `sudo sysctl user.max_user_namespaces=15000`" +
			" (inside a container, the container's runtime must allow them)"
	}
	return "enable unprivileged user namespaces (sysctl user.max_user_namespaces > 0; " +
		"inside a container, the container's runtime must allow them)"
}

// formatBytes writes n in the policy file's units (KiB, MiB, GiB).
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	if n >= 1<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}
