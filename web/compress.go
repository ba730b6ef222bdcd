package web

import (
	"io"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// compressLevel: the fastest level of klauspost/compress. Under make load
// gzip at the standard library's level 5 was 55 % of the server's CPU
// (pprof, 30 s under 200 learners), and on two shared cores CPU is what
// the tails wait for. klauspost/compress (already in the module graph
// through NATS, and used for kept machines) at level 1 compresses a
// lesson page about 6× faster than compress/gzip at 5 for about 14 % more
// bytes (a few KB a page): bytes are cheap on a lab's network, CPU is not.
const compressLevel = 1

// compressTypes are the responses compressed; text/event-stream is
// deliberately absent: SSE must not be buffered.
var compressTypes = []string{"text/html", "text/css", "text/plain", "text/javascript",
	"application/javascript", "application/json", "image/svg+xml"}

// compressor is chi's Compress middleware with klauspost/compress's
// encoders in place of the standard library's (pooled: both Reset).
func compressor() func(http.Handler) http.Handler {
	c := middleware.NewCompressor(compressLevel, compressTypes...)
	c.SetEncoder("deflate", func(w io.Writer, level int) io.Writer {
		fw, err := flate.NewWriter(w, level)
		if err != nil {
			return nil
		}
		return fw
	})
	c.SetEncoder("gzip", func(w io.Writer, level int) io.Writer {
		gw, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return nil
		}
		return gw
	})
	return c.Handler
}
