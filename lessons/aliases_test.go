package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestAliases(t *testing.T) {
	page := func(fm string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\ntitle: T\nsummary: S.\norder: 1\n" + fm + "---\n\nText.\n")}
	}
	fsys := fstest.MapFS{
		"02-new/index.en.md": page("aliases: [02-old, 02-older]\n"),
		"03-b/index.en.md":   page(""),
	}
	c, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.AliasTarget("02-old") != "02-new" || c.AliasTarget("02-older") != "02-new" || c.AliasTarget("03-b") != "" {
		t.Errorf("aliases %v", c.Aliases())
	}
	// An alias that is a lesson's folder, or claimed twice, is an error.
	fsys["03-b/index.en.md"] = page("aliases: [02-new, 02-old]\n")
	var msgs []string
	for _, d := range Check(fsys, Options{}) {
		if d.Severity == Error {
			msgs = append(msgs, d.String())
		}
	}
	got := strings.Join(msgs, "\n")
	if !strings.Contains(got, `"02-new" is the folder of a lesson`) || !strings.Contains(got, `"02-old" is an alias of`) {
		t.Errorf("findings:\n%s", got)
	}
}
