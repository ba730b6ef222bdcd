package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// configRows reads the "| flag | env… | default | what |" table of a
// Markdown file: flag name → the row's environment and default cells. A
// row may name several flags ("`--nats-nkeys`, `--nats-token`").
func configRows(t *testing.T, file string) map[string][2]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][2]string{}
	in := false
	flagName := regexp.MustCompile("`--([a-z0-9-]+)`")
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| flag | env") {
			in = true
			continue
		}
		if in && !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if !in || len(cells) < 5 {
			continue
		}
		for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = [2]string{cells[2], cells[3]}
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no configuration table", file)
	}
	return rows
}

// TestConfigTablesMatchFlags (issue 29 item 11): README's and
// docs/operations.md's configuration tables list every flag of `labserver
// serve` (-h), with the environment variable its usage names and its
// default. README lacked --terminals; the docs said one guest per two CPUs
// where -h said one per CPU.
func TestConfigTablesMatchFlags(t *testing.T) {
	m := &Main{Getenv: func(string) string { return "" }}
	fset := serveFlagSet(m, io.Discard)
	envOf := regexp.MustCompile(`\[(LAB_[A-Z_]+)\]`)
	for _, file := range []string{"../../README.md", "../../docs/operations.md"} {
		rows := configRows(t, file)
		fset.VisitAll(func(f *flag.Flag) {
			row, ok := rows[f.Name]
			if !ok {
				t.Errorf("%s: the configuration table lacks --%s (%s)", file, f.Name, f.Usage)
				return
			}
			if e := envOf.FindStringSubmatch(f.Usage); e != nil && !strings.Contains(row[0], e[1]) {
				t.Errorf("%s: --%s: environment %q, -h says %s", file, f.Name, strings.TrimSpace(row[0]), e[1])
			}
			switch f.DefValue {
			case "", "0", "false":
			default:
				if !strings.Contains(row[1], f.DefValue) {
					t.Errorf("%s: --%s: default %q, -h says %s", file, f.Name, strings.TrimSpace(row[1]), f.DefValue)
				}
			}
		})
		for name := range rows {
			if fset.Lookup(name) == nil {
				t.Errorf("%s: --%s is no flag of labserver serve", file, name)
			}
		}
	}
	if g := fset.Lookup("guests"); !strings.Contains(g.Usage, "one per two CPUs") {
		t.Errorf("-h on --guests: %q (machines/vm.DefaultGuests takes one per two CPUs)", g.Usage)
	}
}
