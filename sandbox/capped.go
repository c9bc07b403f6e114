package sandbox

import (
	"fmt"
	"strings"
	"sync"
)

// DefaultOutput is the per-stream cap used when Limits.Output is not positive.
const DefaultOutput = 64 << 10

// CappedBuffer is an io.Writer that keeps at most limit bytes of what is
// written to it: the first half and the last half of the stream. Bytes in
// between are counted and dropped, so memory stays bounded however much is
// written. It is safe for concurrent use.
type CappedBuffer struct {
	mu    sync.Mutex
	head  []byte // first headCap bytes
	tail  []byte // ring of the last len(tail) bytes once head is full
	next  int    // next write position in tail
	full  bool   // tail has wrapped at least once
	total int64
	limit int64
}

// NewCappedBuffer returns a buffer that keeps at most limit bytes
// (DefaultOutput when limit is not positive).
func NewCappedBuffer(limit int64) *CappedBuffer {
	if limit <= 0 {
		limit = DefaultOutput
	}
	headCap := limit - limit/2
	return &CappedBuffer{
		head:  make([]byte, 0, headCap),
		tail:  make([]byte, limit/2),
		limit: limit,
	}
}

// Write keeps what fits and counts the rest. It never fails.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := cap(b.head) - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || len(b.tail) == 0 {
		return n, nil
	}
	if len(p) >= len(b.tail) {
		copy(b.tail, p[len(p)-len(b.tail):])
		b.next, b.full = 0, true
		return n, nil
	}
	k := copy(b.tail[b.next:], p)
	if k < len(p) {
		copy(b.tail, p[k:])
		b.full = true
	}
	b.next = (b.next + len(p)) % len(b.tail)
	if b.next == 0 {
		b.full = true
	}
	return n, nil
}

// Total is the number of bytes written, kept or not.
func (b *CappedBuffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Truncated reports whether bytes were dropped.
func (b *CappedBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > b.limit
}

// String returns the kept bytes; when some were dropped, a marker saying how
// many stands where they were.
func (b *CappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var tail []byte
	if b.full {
		tail = append(append(tail, b.tail[b.next:]...), b.tail[:b.next]...)
	} else {
		tail = b.tail[:b.next]
	}
	var s strings.Builder
	s.Grow(len(b.head) + len(tail) + 64)
	s.Write(b.head)
	if dropped := b.total - int64(len(b.head)) - int64(len(tail)); dropped > 0 {
		fmt.Fprintf(&s, "\n[... %d bytes truncated ...]\n", dropped)
	}
	s.Write(tail)
	return s.String()
}
