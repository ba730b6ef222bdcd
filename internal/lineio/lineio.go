// Package lineio reads lines of a byte stream with a bound on their length,
// so that a peer or child that never writes a newline cannot grow memory.
package lineio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrLongLine is a line over the limit; Read skipped it.
var ErrLongLine = errors.New("line too long")

// Read reads one non-empty line of at most max bytes, without the
// surrounding blanks and line end. A longer line is skipped (the reader
// never holds more than max+1 bytes of it) and reported as ErrLongLine, so
// the stream recovers at the next line.
func Read(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max+1 {
			// Skip the rest of the oversized line so the stream recovers.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return nil, fmt.Errorf("%w (%d bytes)", ErrLongLine, max)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !(errors.Is(err, io.EOF) && len(line) > 0):
			return nil, err
		}
		if trimmed := trim(line); len(trimmed) > 0 {
			return trimmed, nil
		}
		if err != nil { // EOF after a blank line
			return nil, io.EOF
		}
		line = line[:0]
	}
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return b
}

// ReadClipped reads one line (up to and without its "\n" or "\r\n") and
// keeps at most max bytes of it; the rest of the line is read and thrown
// away, and counted in cut. An endless line therefore costs the reader's
// buffer plus max bytes, however long it runs. At the end of the stream it
// returns the last unterminated line, if any, with io.EOF.
func ReadClipped(br *bufio.Reader, max int) (line []byte, cut int, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if rerr == nil {
			chunk = chunk[:len(chunk)-1] // the newline is neither kept nor cut
		}
		keep := min(len(chunk), max-len(line))
		line = append(line, chunk[:keep]...)
		cut += len(chunk) - keep
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\r")), cut, rerr
	}
}
