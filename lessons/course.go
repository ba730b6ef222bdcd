package lessons

import (
	"embed"
	"errors"
	"io/fs"
	"path"
	"strings"
)

//go:embed course
var courseFS embed.FS

// Builtin is the course shipped in the binary, with the lesson folders at its root.
var Builtin fs.FS = mustSub(courseFS, "course")

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embed pattern guarantees the folder exists
	}
	return s
}

// Lesson returns the lesson with this slug, or nil.
func (c *Course) Lesson(slug string) *Lesson {
	for _, l := range c.Lessons {
		if l.Slug == slug {
			return l
		}
	}
	return nil
}

// Neighbours returns the lessons before and after slug in course order (nil
// at either end or for an unknown slug).
func (c *Course) Neighbours(slug string) (prev, next *Lesson) {
	for i, l := range c.Lessons {
		if l.Slug != slug {
			continue
		}
		if i > 0 {
			prev = c.Lessons[i-1]
		}
		if i+1 < len(c.Lessons) {
			next = c.Lessons[i+1]
		}
		return prev, next
	}
	return nil, nil
}

// Page returns the lesson in lang. A language the lesson lacks gives the
// other language's page with Fallback set; an unknown lang gives the default
// language's page.
func (l *Lesson) Page(lang string) *Page {
	if p := l.Pages[lang]; p != nil {
		return p
	}
	for _, k := range Langs {
		if p := l.Pages[k]; p != nil {
			return p
		}
	}
	return nil
}

// assetExts are the files of a lesson folder the site may serve. It is an
// allow-list on purpose: quiz.yaml holds the answers and must never be served.
var assetExts = []string{".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf"}

// IsAsset reports whether name (a path inside a lesson folder) is a file
// type that lessons may link to and the site may serve.
func IsAsset(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	for _, e := range assetExts {
		if ext == e {
			return true
		}
	}
	return false
}

// ErrNotAsset is returned by OpenAsset for paths that are not servable assets.
var ErrNotAsset = errors.New("not a lesson asset")

// OpenAsset opens a file of a lesson folder for GET /lessons/{slug}/assets/{name...}.
// Only known lessons, clean relative paths and asset file types (IsAsset) are
// allowed; anything else wraps fs.ErrNotExist so handlers answer 404.
func (c *Course) OpenAsset(slug, name string) (fs.File, error) {
	if c.Lesson(slug) == nil || c.fsys == nil || !fs.ValidPath(name) || name == "." || !IsAsset(name) {
		return nil, errors.Join(ErrNotAsset, fs.ErrNotExist)
	}
	p := slug
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return nil, errors.Join(ErrNotAsset, fs.ErrNotExist)
		}
		// os.DirFS follows symlinks, and a symlink in an instructor's
		// folder may point anywhere on the server (the database, /etc):
		// assets are served only as real files and folders of the lesson.
		p += "/" + part
		if fi, err := fs.Lstat(c.fsys, p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, errors.Join(ErrNotAsset, fs.ErrNotExist)
		}
	}
	return c.fsys.Open(slug + "/" + name)
}

// symlinkIn returns the first part of slug/name that is a symbolic link
// ("" when none is): OpenAsset refuses those, so check must too.
func symlinkIn(fsys fs.FS, slug, name string) string {
	p := slug
	for _, part := range strings.Split(name, "/") {
		p += "/" + part
		if fi, err := fs.Lstat(fsys, p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return p
		}
	}
	return ""
}

func statFS(fsys fs.FS, name string) (fs.FileInfo, error) {
	return fs.Stat(fsys, name)
}
