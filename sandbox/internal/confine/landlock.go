package confine

import "strconv"

// The landlock kind's helper is package sandbox/internal/landlockexec,
// which starts early in a program's initialisation; this package keeps
// what trio itself says about the kind.

// LandlockABIMin is the oldest Landlock ABI the landlock kind runs on.
const LandlockABIMin = 1

// LandlockEnforces says what the landlock kind's Landlock domain holds on
// a kernel of ABI abi: the walls that depend on the ABI.
func LandlockEnforces(abi int) (yes, no []string) {
	yes = append(yes, "landlock ABI "+strconv.Itoa(abi)+": reads only the workspace, toolchain and system folders; writes only the workspace (less its read-only paths), its own HOME, TMPDIR and cache")
	if abi < 3 {
		no = append(no, "truncate(2) of readable files: Landlock ABI 3 needed")
	}
	if abi >= 4 {
		yes = append(yes, "no TCP bind or connect (landlock ABI 4)")
	}
	if abi >= 6 {
		yes = append(yes, "signals and abstract UNIX sockets only within the command (landlock ABI 6)")
	} else {
		no = append(no, "signals to this user's other processes and abstract UNIX sockets: Landlock ABI 6 needed; a command can kill its supervisor, and then its background processes outlive it")
	}
	return yes, no
}
