// Package syscallfilter is the seccomp filter of the isolating kinds that
// confine commands themselves (userns through bwrap, landlock in Trio's
// helper): one deny-list, so that both refuse the same system calls. It
// must not depend on any sandbox kind.
package syscallfilter

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// blockedSyscalls fail with EPERM inside the sandbox. They are what
// containerd's (Docker's) default profile refuses a container without
// capabilities, less what bwrap's namespaces already make harmless, plus
// io_uring (which performs file and network I/O outside these checks) and
// the new mount API. The list is a deny-list on purpose: an allow-list
// like Docker's needs argument filters compiled by libseccomp (cgo), and
// the namespaces, no capabilities and Landlock stand behind it.
var blockedSyscalls = []string{
	// Mounts and namespaces: a command must not rearrange what it sees.
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	// The kernel keyring is not namespaced.
	"keyctl", "add_key", "request_key",
	// BPF programs and perf events reach kernel memory and other processes.
	"bpf", "perf_event_open", "userfaultfd",
	// Other processes' memory.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	// Kernels and modules.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"create_module", "get_kernel_syms", "query_module",
	// Host-wide state.
	"reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "syslog", "quotactl", "quotactl_fd", "lookup_dcookie", "nfsservctl", "_sysctl",
	"sysfs", "ustat", "uselib", "vhangup", "iopl", "ioperm",
	// File handles bypass path checks (Landlock, mounts).
	"open_by_handle_at", "name_to_handle_at",
	// io_uring does I/O in kernel threads, around seccomp.
	"io_uring_setup", "io_uring_enter", "io_uring_register",
}

// namespaceFlags are the clone flags that make new namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Options add rules to the shared filter.
type Options struct {
	// UnixSocketsOnly makes socket(2) fail with EPERM for every address
	// family but AF_UNIX: no network at all, loopback included, for a
	// kind without a network namespace.
	UnixSocketsOnly bool
}

// Program is the filter, in the kernel's struct sock_filter layout (what
// bwrap's --seccomp reads, and what Install loads).
//
// Three rules around the deny-list: any system call of another
// architecture than this binary's (int 0x80 on x86_64, which the kernel
// reports as i386 and a filter written for x86_64 numbers would let
// through) kills the process; clone with a namespace flag fails with
// EPERM; clone3, whose flags are behind a pointer a filter cannot read,
// fails with ENOSYS so that libc falls back to clone.
func Program(opts Options) ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	pol := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: knownSyscalls(info, blockedSyscalls), Action: seccomp.ActionErrno},
			{NamesWithCondtions: []seccomp.NameWithConditions{{Name: "clone", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags},
			}}}, Action: seccomp.ActionErrno},
			{Names: knownSyscalls(info, []string{"clone3"}), Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
		},
	}
	if opts.UnixSocketsOnly {
		pol.Syscalls = append(pol.Syscalls, seccomp.SyscallGroup{
			NamesWithCondtions: []seccomp.NameWithConditions{{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX},
			}}}, Action: seccomp.ActionErrno})
	}
	insts, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	prefix := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	raw, err := bpf.Assemble(append(prefix, insts...))
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}

// knownSyscalls keeps the names this architecture has (x86_64 has no
// create_module on newer tables, arm64 no iopl); the filter assembler
// refuses unknown names, and a name the kernel lacks cannot be called.
func knownSyscalls(info *arch.Info, names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := info.SyscallNames[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// Install loads prog (from Program) for every thread of this process
// (SECCOMP_FILTER_FLAG_TSYNC) and everything it runs. No new privileges
// must already be set, or the process must hold CAP_SYS_ADMIN.
func Install(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 {
		return fmt.Errorf("seccomp: a program of %d bytes", len(prog))
	}
	filters := make([]unix.SockFilter, len(prog)/8)
	for i := range filters {
		b := prog[8*i:]
		filters[i] = unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filters)
	if errno != 0 {
		return fmt.Errorf("seccomp: load filter: %w", errno)
	}
	return nil
}
