// Package gocacheprog is a GOCACHEPROG program for sandboxes: the go
// command's build cache lookups go to a writable folder first, then to
// read-only base folders; every put goes to the writable folder. Both
// hold the go command's own GOCACHE layout, so a base is a build cache the
// go command wrote, and the writable folder is one too.
//
// This is how a sandbox shares a trusted warm cache without copying it:
// the base is mounted read-only, so no command can change it, and the
// writable folder is the run's own, replaced by a new empty one when the
// Critic must not see what the Worker's code wrote there.
//
// The protocol is cmd/go/internal/cacheprog's: JSON requests on stdin,
// one JSON response each on stdout, the first response naming the
// commands this program knows.
package gocacheprog

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Flag is the argument that makes a sandbox's helper the go command's
// cache program: GOCACHEPROG="HELPER Flag DIR BASE...", DIR "-" for a
// read-only cache (see Serve). Prog writes that value.
const Flag = "--trio-gocacheprog"

// Prog is GOCACHEPROG for the helper at path serving dir ("" for none)
// over bases. Paths must not hold spaces (the go command splits the value
// on them); the sandboxes' fixed paths do not.
func Prog(path, dir string, bases ...string) string {
	if dir == "" {
		dir = "-"
	}
	return strings.Join(append([]string{path, Flag, dir}, bases...), " ")
}

// ReadOnly is prog, a GOCACHEPROG value Prog wrote for the helper at
// path, reading its writable folder as one more base and putting nowhere
// another process could change (dir "-"); any other value is returned as
// it is.
func ReadOnly(prog, path string) string {
	f := strings.Fields(prog)
	switch {
	case len(f) < 3 || f[0] != path || f[1] != Flag || f[2] == "-":
		return prog
	}
	return Prog(path, "", f[2:]...)
}

// Main runs the cache program and exits when this process was started
// as Prog's command line for the helper at path; otherwise it returns at
// once. Each sandbox kind's helper calls it from its init function.
func Main(path string) {
	if len(os.Args) < 3 || os.Args[0] != path || os.Args[1] != Flag {
		return
	}
	dir := os.Args[2]
	if dir == "-" {
		dir = ""
	}
	if err := Serve(os.Stdin, os.Stdout, dir, os.Args[3:]...); err != nil {
		fmt.Fprintf(os.Stderr, "trio build cache: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// request and response are cmd/go/internal/cacheprog's Request and
// Response, with the fields this program uses.
type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// Serve answers the go command's requests on in with responses on out
// until a "close" request or the end of in. dir is the writable cache;
// bases are read in order after it and never written. With dir "" the
// cache reads only the bases and what this go command put itself: puts
// go to a temporary folder, and a lookup answers from there only for an
// action this program stored, and only while the output's content still
// has the output's ID (its SHA-256), so a file another process plants or
// rewrites there is never answered. (The go command reads back some of
// what it puts, its module index among them, and fails without it.)
//
// Each request is one line of JSON; a put's body follows on the next line
// as a base64 JSON string, which is decoded as it streams into its file.
func Serve(in io.Reader, out io.Writer, dir string, bases ...string) error {
	r := bufio.NewReaderSize(in, 64<<10)
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(bw)
	write := func(r response) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := write(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	c := cache{dir: dir, bases: bases, read: dir != "", own: map[string]ownEntry{}}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "trio-gocache-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		c.dir = tmp
	}
	for {
		line, err := readLine(r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		if len(line) == 0 {
			continue // the go command ends each request with an empty line
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		var resp response
		switch req.Command {
		case "get":
			resp = c.get(req.ActionID)
		case "put":
			if req.BodySize < 0 {
				return fmt.Errorf("request %d: body size %d", req.ID, req.BodySize)
			}
			resp, err = c.put(req, r)
			if err != nil {
				return fmt.Errorf("read the body of request %d: %w", req.ID, err)
			}
		case "close":
			return write(response{ID: req.ID})
		default:
			resp.Err = fmt.Sprintf("unknown command %q", req.Command)
		}
		resp.ID = req.ID
		if err := write(resp); err != nil {
			return err
		}
	}
}

// maxLine bounds a request line: the go command's are a few hundred bytes.
const maxLine = 1 << 20

// readLine reads one line without its newline, refusing one longer than
// maxLine. io.EOF means the input ended between requests.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case len(line) > maxLine:
			return nil, fmt.Errorf("a request longer than %d bytes", maxLine)
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
		return line[:len(line)-1], nil
	}
}

// body is a put's body as it streams in: a JSON string of base64 (whose
// alphabet needs no escapes) on a line of its own.
type body struct {
	r      *bufio.Reader
	opened bool
	closed bool
}

// Read returns the base64 text between the quotes.
func (b *body) Read(p []byte) (int, error) {
	for !b.opened {
		// The go command leaves an empty line before the body.
		c, err := b.r.ReadByte()
		if err != nil || (c != '"' && c != '\n') {
			return 0, errors.New("the body is not a JSON string")
		}
		b.opened = c == '"'
	}
	if b.closed {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) {
		c, err := b.r.ReadByte()
		if err != nil {
			return n, io.ErrUnexpectedEOF
		}
		if c == '"' {
			b.closed = true
			if c, err := b.r.ReadByte(); err != nil || c != '\n' {
				return n, errors.New("no newline after the body")
			}
			return n, io.EOF
		}
		p[n] = c
		n++
	}
	return n, nil
}

// cache is the layered store: dir, then bases.
type cache struct {
	dir   string // where puts go
	read  bool   // whether lookups read dir before the bases
	bases []string
	// own are the puts of this program when dir is not read, by action
	// ID (hex).
	own map[string]ownEntry
}

type ownEntry struct {
	out  []byte
	size int64
	time time.Time
}

// entrySize is the length of an action entry of the go command's disk
// cache: "v1 <action> <output> <size> <time>\n", the two decimals padded
// to 20 bytes.
const entrySize = 2 + 1 + 64 + 1 + 64 + 1 + 20 + 1 + 20 + 1

// file is where the go command's disk cache keeps id's entry of kind "a"
// (action) or "d" (output).
func file(dir string, id []byte, kind string) string {
	h := hex.EncodeToString(id)
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

func (c *cache) get(action []byte) response {
	if len(action) != 32 {
		return response{Err: "get needs a 32-byte action ID"}
	}
	dirs := c.bases
	if c.read {
		dirs = append([]string{c.dir}, c.bases...)
	}
	if e, ok := c.own[hex.EncodeToString(action)]; ok && !c.read {
		path := file(c.dir, e.out, "d")
		if sameContent(path, e.out, e.size) {
			t := e.time
			return response{OutputID: e.out, Size: e.size, Time: &t, DiskPath: path}
		}
	}
	for _, dir := range dirs {
		if r, ok := lookup(dir, action); ok {
			return r
		}
	}
	return response{Miss: true}
}

// sameContent reports whether path is a regular file (not a symlink) of
// size bytes whose SHA-256 is out.
func sameContent(path string, out []byte, size int64) bool {
	f, ok := openRegular(path, func(n int64) bool { return n == size })
	if !ok {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, f); err != nil || n != size {
		return false
	}
	return string(h.Sum(nil)) == string(out)
}

// lookup reads action's entry in dir and checks that its output is there,
// a regular file of the size the entry gives; anything else (a missing,
// short or long entry, a symlink, a FIFO, a device) is a miss. Neither is
// followed through a symlink, and the entry is read without blocking.
func lookup(dir string, action []byte) (response, bool) {
	b, ok := readEntry(file(dir, action, "a"))
	if !ok || !strings.HasPrefix(string(b), "v1 ") || b[entrySize-1] != '\n' {
		return response{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 5 || f[1] != hex.EncodeToString(action) {
		return response{}, false
	}
	out, err := hex.DecodeString(f[2])
	size, serr := strconv.ParseInt(f[3], 10, 64)
	nano, terr := strconv.ParseInt(f[4], 10, 64)
	if err != nil || len(out) != 32 || serr != nil || terr != nil {
		return response{}, false
	}
	path := file(dir, out, "d")
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return response{}, false
	}
	t := time.Unix(0, nano)
	return response{OutputID: out, Size: size, Time: &t, DiskPath: path}, true
}

// readEntry reads an action entry: a regular file of exactly entrySize
// bytes, opened without following a symlink or waiting on a FIFO.
func readEntry(path string) ([]byte, bool) {
	f, ok := openRegular(path, func(n int64) bool { return n == entrySize })
	if !ok {
		return nil, false
	}
	defer f.Close()
	b := make([]byte, entrySize)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, false
	}
	return b, true
}

// put streams the body into the output's file, then writes the action
// entry, each to a temporary file renamed into place, so a reader never
// sees half of either. An error is the stream's (the request framing is
// lost); a put the cache cannot store is answered with Err.
func (c *cache) put(req request, r *bufio.Reader) (response, error) {
	var src io.Reader = strings.NewReader("")
	if req.BodySize > 0 {
		src = base64.NewDecoder(base64.StdEncoding, &body{r: r})
	}
	refuse := func(msg string) (response, error) {
		// The body must still be read, to keep the stream in step.
		if _, err := io.Copy(io.Discard, src); err != nil {
			return response{}, err
		}
		return response{Err: msg}, nil
	}
	if len(req.ActionID) != 32 || len(req.OutputID) != 32 {
		return refuse("put needs 32-byte action and output IDs")
	}
	path := file(c.dir, req.OutputID, "d")
	if err := writeFile(path, src, req.BodySize, req.OutputID); err != nil {
		if errors.Is(err, errBody) {
			return response{}, err
		}
		return response{Err: err.Error()}, nil
	}
	now := time.Now()
	if !c.read {
		c.own[hex.EncodeToString(req.ActionID)] = ownEntry{out: req.OutputID, size: req.BodySize, time: now}
		return response{DiskPath: path}, nil
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, req.OutputID, req.BodySize, now.UnixNano())
	if err := writeFile(file(c.dir, req.ActionID, "a"), strings.NewReader(entry), entrySize, nil); err != nil {
		return response{Err: err.Error()}, nil
	}
	return response{DiskPath: path}, nil
}

// errBody marks a failure to read a put's body from the request stream,
// as opposed to one to write it.
var errBody = errors.New("body")

// writeFile copies src, which must hold size bytes (whose SHA-256 is
// sum, unless sum is nil: an output's ID is its content's hash, so a put
// can only store what its name says), into a temporary file beside path,
// then renames it to path: a rename within one folder,
// which Landlock allows where a move between folders needs a right the
// sandbox does not give. A failure to read src wraps errBody; nothing is
// left after a failure (path's folder goes too when it was made for it).
func writeFile(path string, src io.Reader, size int64, sum []byte) error {
	dir := filepath.Dir(path)
	_, statErr := os.Stat(dir)
	// Readable by all and writable by the server alone, whatever its
	// umask: in the containerd kind the server is init, and the go
	// command reading the entries is the sandbox user.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		io.Copy(io.Discard, src)
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		io.Copy(io.Discard, src)
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), readErr{src})
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("put: body of %d bytes, want %d", n, size)
	}
	if err == nil && sum != nil && string(h.Sum(nil)) != string(sum) {
		err = fmt.Errorf("put: the body's SHA-256 is not its output ID %x", sum)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		if statErr != nil {
			os.Remove(dir) // made for this put; fails if another put used it
		}
		if !errors.Is(err, errBody) {
			io.Copy(io.Discard, src)
		}
	}
	return err
}

// readErr marks src's errors with errBody.
type readErr struct{ src io.Reader }

func (r readErr) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %w", errBody, err)
	}
	return n, err
}

// Import moves into store what a go command wrote into src, a writable
// layer over its GOCACHE (an overlay's upper folder): each output file
// whose SHA-256 is its name and each action entry of the disk cache's
// format, and the time of the last trim. Anything else there (a folder
// that is not one of the 256 shards, a symlink, a whiteout, a short or
// long entry, an output whose content is not its ID) is left out, and src
// is left for the caller to remove. The go command that wrote src is
// trusted to map actions to outputs; nothing else may have written it.
func Import(store, src string) (int, error) {
	n := 0
	if b, ok := readSmall(filepath.Join(src, "trim.txt"), 32); ok {
		if _, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			if err := os.WriteFile(filepath.Join(store, "trim.txt"), b, 0o644); err != nil {
				return n, err
			}
		}
	}
	shards, err := os.ReadDir(src)
	if err != nil {
		return n, err
	}
	for _, sh := range shards {
		name := sh.Name()
		if !sh.IsDir() || len(name) != 2 || strings.Trim(name, "0123456789abcdef") != "" {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(src, name))
		if err != nil {
			return n, err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !entryName(name, e.Name()) {
				continue
			}
			path := filepath.Join(src, name, e.Name())
			var st syscall.Stat_t
			if err := syscall.Lstat(path, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
				!validEntry(path, name+"/"+e.Name(), &st) {
				continue
			}
			if err := shard(filepath.Join(store, name)); err != nil {
				return n, err
			}
			if err := os.Rename(path, filepath.Join(store, name, e.Name())); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// shard makes a shard folder of an imported store as the go command's
// own cache has them, writable by all: as a lower layer of an overlay the
// shard is the merged folder's, where the go command adds entries.
func shard(dir string) error {
	if err := os.Mkdir(dir, 0o777); errors.Is(err, fs.ErrExist) {
		return nil
	} else if err != nil {
		return err
	}
	return os.Chmod(dir, 0o777)
}

// readSmall reads a regular file of at most max bytes, without following
// a symlink or waiting on a FIFO.
func readSmall(path string, max int64) ([]byte, bool) {
	f, ok := openRegular(path, func(n int64) bool { return n <= max })
	if !ok {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max))
	return b, err == nil
}

// openRegular opens path for reading when it is a regular file whose size
// sizeOK accepts, without following a symlink or waiting on a FIFO.
func openRegular(path string, sizeOK func(int64) bool) (*os.File, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	f := os.NewFile(uintptr(fd), path)
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || !sizeOK(st.Size()) {
		f.Close()
		return nil, false
	}
	return f, true
}
