package web

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"

	"github.com/rdmalab/rdmalab/web/page"
)

// A lesson page is ~90 KB of HTML that is the same for every learner
// (the skeleton's chunks) around a few KB that are theirs (the holes).
// Compressing the whole page on every request was a quarter of the
// server's CPU under make load, the largest single cost. The chunks are
// compressed once, each as deflate blocks ending in a sync flush
// (byte-aligned, not final); a request compresses only its holes the same
// way and joins the pieces into one gzip member (RFC 1951 lets a stream be
// any sequence of blocks; RFC 1952's header, CRC-32 and length frame it).
//
// A chunk compressed on its own cannot refer to the page before it, and
// lessons repeat themselves: apart, the chunks of lesson 07 compress to
// 36 KB, together to 15 KB. So each chunk is also compressed with the
// page before it as deflate's preset window, the holes in that window
// filled with NUL bytes (which HTML never contains, so nothing refers to
// them). Such a chunk is valid wherever every hole before it has the
// length the window assumed: the lengths of the first request's holes,
// which a learner's first visit keeps (their own option order, the same
// bytes). A request whose hole differs in length sends the later chunks
// in their standalone form.

// gzipHeader is a gzip member header: deflate, no name, no time, OS unknown.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// deflateFinal is an empty final block (fixed Huffman, end of block).
var deflateFinal = []byte{0x03, 0x00}

// gzipRealigned counts the pages whose later chunks went standalone
// because a hole's length differed from the window's (tests read it).
var gzipRealigned atomic.Int64

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, compressLevel)
	return w
}}

// gzipHolesDeflated counts the holes compressed anew, not found in
// holePieces (tests read it).
var gzipHolesDeflated atomic.Int64

// holePieces keeps holes' deflate pieces by their bytes. Building a
// dynamic Huffman block for each of a page's ~24 holes was nearly all of a
// gzip page's 220 µs (pprof: huffmanEncoder.bitCounts), and holes repeat:
// a status line has a few forms, a question's options a few orders. A
// piece is a function of the hole's bytes alone (compressed without a
// window), so the cache is never stale and needs no invalidation; a hole a
// learner makes unique (their own text) only costs a slot.
var holePieces = pieceCache{max: 8 << 20}

// pieceCacheHoleMax is the longest hole kept: longer ones are rare (a
// learner's long answer) and compressing them is not the per-block cost.
const pieceCacheHoleMax = 16 << 10

// pieceCache is a bounded map from a hole's bytes to its deflate piece.
// Past max bytes (keys and pieces) it starts over: it is only a cache.
type pieceCache struct {
	max   int
	mu    sync.Mutex
	m     map[string][]byte
	bytes int
}

// deflate appends p's piece to dst: from the cache, or compressed now
// (and kept when p is short enough).
func (c *pieceCache) deflate(dst *bytes.Buffer, p []byte) error {
	keep := len(p) <= pieceCacheHoleMax
	if keep {
		c.mu.Lock()
		d, ok := c.m[string(p)]
		c.mu.Unlock()
		if ok {
			dst.Write(d)
			return nil
		}
	}
	gzipHolesDeflated.Add(1)
	start := dst.Len()
	if err := deflatePiece(dst, p); err != nil {
		return err
	}
	if keep {
		d := bytes.Clone(dst.Bytes()[start:])
		c.mu.Lock()
		if c.m == nil || c.bytes+len(p)+len(d) > c.max {
			c.m, c.bytes = map[string][]byte{}, 0
		}
		if _, ok := c.m[string(p)]; !ok {
			c.m[string(p)] = d
			c.bytes += len(p) + len(d)
		}
		c.mu.Unlock()
	}
	return nil
}

// deflatePiece appends p to dst as deflate blocks ending in a sync flush.
func deflatePiece(dst *bytes.Buffer, p []byte) error {
	fw := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(fw)
	fw.Reset(dst)
	if _, err := fw.Write(p); err != nil {
		return err
	}
	return fw.Flush()
}

// gzipAligned is a skeleton's chunks compressed with the page before them
// as their window, for holes of the lengths holeLen.
type gzipAligned struct {
	holeLen []int
	gz      [][]byte
}

// alignedChunks compresses every chunk with the page before it (holes as
// NUL bytes of holeLen) as its preset window.
func alignedChunks(chunks [][]byte, holeLen []int) (*gzipAligned, error) {
	a := &gzipAligned{holeLen: holeLen, gz: make([][]byte, len(chunks))}
	var before []byte
	fw, err := flate.NewWriter(nil, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	for i, c := range chunks {
		var b bytes.Buffer
		fw.ResetDict(&b, before)
		if _, err := fw.Write(c); err != nil {
			return nil, err
		}
		if err := fw.Flush(); err != nil {
			return nil, err
		}
		a.gz[i] = b.Bytes()
		before = append(before, c...)
		if i < len(holeLen) {
			before = append(before, make([]byte, holeLen[i])...)
		}
		if n := len(before); n > 32<<10 {
			before = append([]byte(nil), before[n-32<<10:]...)
		}
	}
	return a, nil
}

// aligned returns the skeleton's window-compressed chunks, or nil while
// they are being made: the first request's hole lengths start it.
func (sk *skeleton) aligned(holeLen func() []int) *gzipAligned {
	if a := sk.gzAligned.Load(); a != nil {
		return a
	}
	if sk.gzAligning.CompareAndSwap(false, true) {
		lens := holeLen()
		go func() {
			if a, err := alignedChunks(sk.chunks, lens); err == nil {
				sk.gzAligned.Store(a)
			}
		}()
	}
	return nil
}

// deflateChunks compresses each chunk of a skeleton on its own, once per
// content load, so at the best level: a chunk cannot refer to the page
// before it, and the best level wins most of that back.
func deflateChunks(chunks [][]byte) ([][]byte, error) {
	out := make([][]byte, len(chunks))
	fw, err := flate.NewWriter(nil, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	for i, c := range chunks {
		var b bytes.Buffer
		fw.Reset(&b)
		if _, err := fw.Write(c); err != nil {
			return nil, err
		}
		if err := fw.Flush(); err != nil {
			return nil, err
		}
		out[i] = b.Bytes()
	}
	return out, nil
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (a "gzip" or "*" coding whose q is not 0).
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if name != "gzip" && name != "x-gzip" && name != "*" {
				continue
			}
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}

// writeGzipSkeleton writes the page sk filled with the rendered holes
// (filled, cut at ends) as one gzip member from the chunks compressed at
// build time and the holes compressed now. It reports false, having
// written nothing, when a hole cannot be compressed.
func writeGzipSkeleton(w http.ResponseWriter, r *http.Request, status int, sk *skeleton, filled []byte, ends []int) bool {
	al := sk.aligned(func() []int {
		lens := make([]int, len(ends))
		for i, e := range ends {
			if i > 0 {
				lens[i] = e - ends[i-1]
			} else {
				lens[i] = e
			}
		}
		return lens
	})
	holes := page.Buffer() // pooled: growing a fresh one was most of a page's garbage
	defer page.PutBuffer(holes)
	holeEnds := make([]int, 0, len(ends))
	chunks := make([][]byte, len(sk.gz))
	aligned := al != nil
	crc := uint32(0)
	size := 0
	start := 0
	length := len(gzipHeader) + len(deflateFinal) + 8
	for i, c := range sk.chunks {
		crc = crc32.Update(crc, crc32.IEEETable, c)
		size += len(c)
		chunks[i] = sk.gz[i]
		if aligned {
			chunks[i] = al.gz[i]
		}
		length += len(chunks[i])
		if i < len(ends) {
			h := filled[start:ends[i]]
			crc = crc32.Update(crc, crc32.IEEETable, h)
			size += len(h)
			if err := holePieces.deflate(holes, h); err != nil {
				return false
			}
			holeEnds = append(holeEnds, holes.Len())
			start = ends[i]
			// The next chunks refer across this hole only if it is as
			// long as their window assumed.
			if aligned && len(h) != al.holeLen[i] {
				aligned = false
				gzipRealigned.Add(1)
			}
		}
	}
	length += holes.Len()
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(size))
	h := w.Header()
	h.Set("Content-Encoding", "gzip") // the compress middleware leaves it alone
	h.Set("Content-Length", strconv.Itoa(length))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return true
	}
	parts := make([][]byte, 0, 2*len(chunks)+3)
	parts = append(parts, gzipHeader)
	hb := holes.Bytes()
	hs := 0
	for i, g := range chunks {
		parts = append(parts, g)
		if i < len(holeEnds) {
			parts = append(parts, hb[hs:holeEnds[i]])
			hs = holeEnds[i]
		}
	}
	parts = append(parts, deflateFinal, trailer[:])
	writeOnce(w, length, parts)
	return true
}
