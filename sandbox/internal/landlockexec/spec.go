package landlockexec

import "errors"

// Spec is what the helper applies. Paths are the host's: this kind has
// no mounts. It travels as arguments (see Args), one a field, before "--"
// and the command.
type Spec struct {
	// Read are folders and files commands may read and execute (symlinks
	// followed: host toolchain folders such as /bin -> usr/bin).
	Read []string
	// Write are folders (and files) commands may also change, symlinks
	// followed: the sandbox's own HOME, TMPDIR and cache.
	Write []string
	// WriteEntries are workspace entries commands may change, opened
	// without following a symlink; one that is a symlink is skipped.
	WriteEntries []string
	// DevFiles are device files commands may read and write (/dev/null).
	DevFiles []string
	// NoNetwork denies TCP bind and connect through Landlock (ABI 4); the
	// seccomp filter denies every socket family but AF_UNIX.
	NoNetwork bool
	Rlimits   []Rlimit
	// Filter is the seccomp program (struct sock_filter entries, native
	// byte order) the command runs under; required.
	Filter []byte
	// Ready, when positive, is a descriptor of the supervisor that the
	// second stage writes "r" to once the command is confined and its
	// program found, just before the exec, which closes it; when the
	// exec fails, the reason follows. A caller that reads it to its end
	// (a started process) knows the walls are up and the program runs.
	// The supervisor hands it to the second stage as descriptor 3 and
	// closes its own.
	Ready int
	// Request, when positive, is a descriptor of the supervisor from
	// which the second stage reads, to its end, the command it runs
	// (see Request): a helper started ahead of its command. The
	// supervisor hands it over as descriptor 3 and closes its own; the
	// spec carries no command then.
	Request int
}

// Rlimit is one resource limit, soft and hard alike.
type Rlimit struct {
	Resource int
	Value    uint64
}

// Args are the helper's arguments for spec and the command argv: the
// supervisor's command line is Arg0, SupervisorFlag, then these.
func (s Spec) Args(argv []string) []string {
	var a []string
	for _, p := range s.Read {
		a = append(a, "r="+p)
	}
	for _, p := range s.Write {
		a = append(a, "w="+p)
	}
	for _, p := range s.WriteEntries {
		a = append(a, "we="+p)
	}
	for _, p := range s.DevFiles {
		a = append(a, "dev="+p)
	}
	if s.NoNetwork {
		a = append(a, "nonet=")
	}
	for _, rl := range s.Rlimits {
		a = append(a, "rl="+itoa(uint64(rl.Resource))+":"+itoa(rl.Value))
	}
	if len(s.Filter) > 0 {
		const hex = "0123456789abcdef"
		b := make([]byte, 0, 2*len(s.Filter))
		for _, c := range s.Filter {
			b = append(b, hex[c>>4], hex[c&15])
		}
		a = append(a, "bpf="+string(b))
	}
	if s.Ready > 0 {
		a = append(a, "ready="+itoa(uint64(s.Ready)))
	}
	if s.Request > 0 {
		a = append(a, "req="+itoa(uint64(s.Request)))
	}
	return append(append(a, "--"), argv...)
}

// parse reads Args back: the spec and the command.
func parse(args []string) (Spec, []string, error) {
	var s Spec
	for i, a := range args {
		if a == "--" {
			if s.Request > 0 {
				if len(args) != i+1 {
					return s, nil, errors.New("a command with a request")
				}
				return s, nil, nil
			}
			if len(args) == i+1 {
				return s, nil, errors.New("no command")
			}
			return s, args[i+1:], nil
		}
		k, v := a, ""
		for j := 0; j < len(a); j++ {
			if a[j] == '=' {
				k, v = a[:j], a[j+1:]
				break
			}
		}
		switch k {
		case "r":
			s.Read = append(s.Read, v)
		case "w":
			s.Write = append(s.Write, v)
		case "we":
			s.WriteEntries = append(s.WriteEntries, v)
		case "dev":
			s.DevFiles = append(s.DevFiles, v)
		case "nonet":
			s.NoNetwork = true
		case "rl":
			var r, val string
			for j := 0; j < len(v); j++ {
				if v[j] == ':' {
					r, val = v[:j], v[j+1:]
				}
			}
			rn, err1 := atoi(r)
			vn, err2 := atoi(val)
			if err1 != nil || err2 != nil {
				return s, nil, errors.New("bad rlimit " + v)
			}
			s.Rlimits = append(s.Rlimits, Rlimit{Resource: int(rn), Value: vn})
		case "bpf":
			if len(v)%2 != 0 {
				return s, nil, errors.New("bad filter")
			}
			s.Filter = make([]byte, len(v)/2)
			for j := range s.Filter {
				hi, lo := unhex(v[2*j]), unhex(v[2*j+1])
				if hi < 0 || lo < 0 {
					return s, nil, errors.New("bad filter")
				}
				s.Filter[j] = byte(hi<<4 | lo)
			}
		case "ready":
			n, err := atoi(v)
			if err != nil {
				return s, nil, errors.New("bad ready " + v)
			}
			s.Ready = int(n)
		case "req":
			n, err := atoi(v)
			if err != nil || n == 0 {
				return s, nil, errors.New("bad req " + v)
			}
			s.Request = int(n)
		default:
			return s, nil, errors.New("unknown field " + k)
		}
	}
	return s, nil, errors.New("no command")
}

// Request is what a helper started ahead of its command (Spec.Request)
// reads: the command's working folder, environment, spec and argv, as
// NUL-terminated fields: the folder, the number of environment entries,
// the entries, then spec.Args(argv).
func Request(dir string, env []string, spec Spec, argv []string) []byte {
	var b []byte
	for _, f := range append(append([]string{dir, itoa(uint64(len(env)))}, env...), spec.Args(argv)...) {
		b = append(append(b, f...), 0)
	}
	return b
}

// parseRequest reads Request back.
func parseRequest(b []byte) (dir string, env []string, spec Spec, argv []string, err error) {
	var f []string
	for start, i := 0, 0; i < len(b); i++ {
		if b[i] == 0 {
			f, start = append(f, string(b[start:i])), i+1
		}
	}
	if len(f) < 2 {
		return "", nil, spec, nil, errors.New("short request")
	}
	n, err := atoi(f[1])
	if err != nil || uint64(len(f)-2) < n {
		return "", nil, spec, nil, errors.New("bad request")
	}
	env = f[2 : 2+n]
	spec, argv, err = parse(f[2+n:])
	if err == nil && spec.Request > 0 {
		err = errors.New("a request within a request")
	}
	return f[0], env, spec, argv, err
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func atoi(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("bad number " + s)
		}
		n = n*10 + uint64(s[i]-'0')
	}
	return n, nil
}
