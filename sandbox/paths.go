package sandbox

// Paths inside an isolating sandbox that lays out its own root
// (containerd, userns), the same in every kind so that a model's commands
// and a policy's folders mean the same in each.
const (
	WorkspaceDir = "/workspace"
	HomeDir      = "/home/trio"
	CacheDir     = "/cache"
	ModCacheDir  = "/go/pkg/mod"
)

// DefaultPids is the pids limit when Limits.Pids is not positive, so a
// fork bomb is always bounded.
const DefaultPids = 1024

// DefaultToolchainDirs are the host folders an isolating sandbox gives
// its commands read-only: the toolchains and system libraries. A folder
// that is a symlink on the host (merged /usr: /bin -> usr/bin) stays one;
// a missing one is skipped. /root, /home, /var, /run and /proc of the host
// are never among them.
var DefaultToolchainDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// DefaultEtcFiles are the files and folders of the host's /etc an
// isolating sandbox gives its commands read-only: what dynamic linking,
// users, certificates and locale need, and nothing that holds host
// configuration secrets.
var DefaultEtcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki",
	"/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
	"/etc/protocols", "/etc/services", "/etc/python3", "/etc/python3.11",
	"/etc/perl", "/etc/gitconfig", "/etc/inputrc",
}
