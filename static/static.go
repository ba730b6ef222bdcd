// Package static holds the browser assets (CSS, JS, vendored libraries)
// embedded into the labserver binary, so a lab needs no files beside it.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sync"
)

// FS is every asset, addressed by its path under static/ (e.g. "css/lab.css").
// Add a directory to the embed line when you add one (js, vendor…).
//
//go:embed css js vendor favicon.ico
var FS embed.FS

// Prefix is where the web server mounts FS.
const Prefix = "/static/"

var hashes = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m[p] = hex.EncodeToString(sum[:6])
		return nil
	})
	return m
})

// Hash returns a short content hash of the asset at path ("" if there is none).
func Hash(path string) string { return hashes()[path] }

// URL returns the asset's URL with its content hash as a version, so pages
// can let browsers cache assets forever and still pick up a new build.
func URL(path string) string {
	if h := Hash(path); h != "" {
		return Prefix + path + "?v=" + h
	}
	return Prefix + path
}
