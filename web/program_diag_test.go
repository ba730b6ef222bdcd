package web

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMissingSemicolonLine: real tcc (the compiler the learner's guest
// runs, installed on the host by make deps) reports a missing ';' at the
// next token, below the starter's comments; the diagnostic is moved to the
// line that lacks it, and left alone where the token shares that line.
func TestMissingSemicolonLine(t *testing.T) {
	tcc, err := exec.LookPath("tcc")
	if err != nil {
		t.Fatalf("tcc not installed (make deps installs it, as the guest has it): %v", err)
	}
	cases := []struct {
		name string
		src  string
		want int // the line that lacks the ';'
	}{
		{"below comments", "#include <stdio.h>\n\nint main(void)\n{\n\tint n = 0\n\t/* Step 2: the instructions\n\t * go on here; see \"man\" */\n\n\t// more; here\n\tif (n == 0) {\n\t\tprintf(\"x\\n\");\n\t}\n\treturn 0;\n}\n", 5},
		{"next line", "int main(void)\n{\n\tint n = 0;\n\tn = n + 1\n\treturn n;\n}\n", 4},
		{"same line", "int main(void)\n{\n\tint n = 0;\n\tn = n + 1 return n;\n}\n", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tcc, "-Wall", "-c", "main.c")
			cmd.Dir = dir
			out, _ := cmd.CombinedOutput()
			evs := placeMissingSemicolons(programDiagnostics(string(out)), c.src)
			if len(evs) == 0 {
				t.Fatalf("no diagnostic from tcc's output %q", out)
			}
			if got := int(evs[0].Figures["line"]); got != c.want {
				t.Errorf("the ';' is missing on line %d, marked on line %d (tcc said %q)", c.want, got, out)
			}
		})
	}
}
