package lessons

import (
	"os"
	"strings"
	"testing"
)

// TestCheckBrokenCourse: every mistake in testdata/broken is reported once,
// at the file and line where an author would fix it.
func TestCheckBrokenCourse(t *testing.T) {
	diags := Check(os.DirFS("testdata/broken"), Options{})
	var out []string
	for _, d := range diags {
		// Other features register diagrams too; the list must not break this golden.
		out = append(out, strings.ReplaceAll(d.String(), strings.Join(diagramIDs(), ", "), "<known diagrams>"))
	}
	golden(t, "broken.check.golden", strings.Join(out, "\n")+"\n")
}
