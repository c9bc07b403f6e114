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
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

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
// bases are read in order after it and never written.
func Serve(in io.Reader, out io.Writer, dir string, bases ...string) error {
	dec := json.NewDecoder(bufio.NewReaderSize(in, 64<<10))
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
	c := cache{dir: dir, bases: bases}
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read request: %w", err)
		}
		var resp response
		switch req.Command {
		case "get":
			resp = c.get(req.ActionID)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				// The body follows as a base64 JSON string, which
				// decoding into a []byte undoes.
				if err := dec.Decode(&body); err != nil {
					return fmt.Errorf("read the body of request %d: %w", req.ID, err)
				}
			}
			resp = c.put(req, body)
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

// cache is the layered store: dir, then bases.
type cache struct {
	dir   string
	bases []string
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
	if len(action) == 0 {
		return response{Err: "get without an action ID"}
	}
	for _, dir := range append([]string{c.dir}, c.bases...) {
		if r, ok := lookup(dir, action); ok {
			return r
		}
	}
	return response{Miss: true}
}

// lookup reads action's entry in dir and checks that its output is there
// with the size the entry gives; anything else is a miss.
func lookup(dir string, action []byte) (response, bool) {
	b, err := os.ReadFile(file(dir, action, "a"))
	if err != nil || len(b) != entrySize || !strings.HasPrefix(string(b), "v1 ") || b[entrySize-1] != '\n' {
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
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return response{}, false
	}
	t := time.Unix(0, nano)
	return response{OutputID: out, Size: size, Time: &t, DiskPath: path}, true
}

// put writes the output, then the action entry, each to a temporary file
// renamed into place, so a reader never sees half of either.
func (c *cache) put(req request, body []byte) response {
	if len(req.ActionID) != 32 || len(req.OutputID) != 32 {
		return response{Err: "put needs 32-byte action and output IDs"}
	}
	if int64(len(body)) != req.BodySize {
		return response{Err: fmt.Sprintf("put: body of %d bytes, want %d", len(body), req.BodySize)}
	}
	path := file(c.dir, req.OutputID, "d")
	if err := writeFile(path, body); err != nil {
		return response{Err: err.Error()}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, req.OutputID, len(body), time.Now().UnixNano())
	if err := writeFile(file(c.dir, req.ActionID, "a"), []byte(entry)); err != nil {
		return response{Err: err.Error()}
	}
	return response{DiskPath: path}
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
