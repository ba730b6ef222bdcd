package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web"
	"github.com/rdmalab/rdmalab/web/instructor"
)

const rosterUsage = `usage: labserver roster import --class CODE FILE.csv [--db PATH]  import a class roster (student id, name)
       labserver roster codes  --class CODE [--db PATH]           the class's personal codes as CSV on stdout
  import reads the CSV as the roster page does (UTF-8, comma, semicolon or
  tab, an optional header row): each line it skips is printed with its
  number and the exit status is 1; the other lines are imported (a student
  id imported again only updates the name; codes and claims stay).
  codes writes student_id,name,class,join_code,personal_code,claimed_at
  with a byte-order mark, as the page's download does.
  --class CODE  the class's join code (see /instructor/classes)
  --db PATH     the lab database [LAB_DB] (default ./rdmalab.db); safe while serving
`

// runRoster is `labserver roster import|codes`.
func runRoster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb, args, fset, code, ok := verbFlags("roster", rosterUsage, args, stderr)
	if !ok {
		return code
	}
	dbPath := fset.String("db", defaultDB(), "database file")
	class := fset.String("class", "", "the class's join code")
	files, code, ok := parseInterleaved(fset, args)
	if !ok {
		return code
	}
	want := 0
	switch verb {
	case "import":
		want = 1
	case "codes":
	default:
		fmt.Fprintf(stderr, "labserver roster: unknown action %q\n\n%s", verb, rosterUsage)
		return 2
	}
	if len(files) != want || *class == "" {
		fmt.Fprint(stderr, rosterUsage)
		return 2
	}
	var data []byte
	if verb == "import" {
		var err error
		if data, err = readBounded(files[0], instructor.MaxRosterFile); err != nil {
			fmt.Fprintln(stderr, "labserver roster:", err)
			return 1
		}
	}
	if _, err := os.Stat(*dbPath); err != nil {
		fmt.Fprintf(stderr, "labserver roster: %v (set --db or LAB_DB to the lab's database)\n", err)
		return 1
	}
	db, err := store.Open(*dbPath)
	if err != nil {
		fmt.Fprintln(stderr, "labserver roster:", err)
		return 1
	}
	defer db.Close()
	c, err := db.CohortByCode(ctx, *class)
	if errors.Is(err, store.ErrNoCohort) {
		fmt.Fprintf(stderr, "labserver roster: no class has the join code %q (see /instructor/classes)\n", *class)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "labserver roster:", err)
		return 1
	}
	if verb == "codes" {
		seats, err := db.Seats(ctx, c.ID)
		if err != nil {
			fmt.Fprintln(stderr, "labserver roster:", err)
			return 1
		}
		if len(seats) == 0 {
			fmt.Fprintf(stderr, "labserver roster: class %q has no roster yet (labserver roster import --class %s FILE)\n", c.Name, c.Code)
			return 1
		}
		stdout.Write(instructor.RosterCodesCSV(c, seats))
		return 0
	}
	if c.Archived() {
		fmt.Fprintf(stderr, "labserver roster: class %q is archived; import into the open class of this term\n", c.Name)
		return 1
	}
	good, problems := instructor.ParseRoster(data)
	for _, p := range instructor.RosterProblems(func(k string) string { return web.UIText("en", k) }, problems) {
		fmt.Fprintf(stderr, "%s: %s\n", files[0], p)
	}
	if len(good) == 0 {
		fmt.Fprintf(stderr, "%s: nothing to import: one student a line, \"student_id,name\"\n", files[0])
		return 1
	}
	added, updated, err := db.ImportRoster(ctx, c.ID, good)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		fmt.Fprintf(stderr, "labserver roster: a class's roster has at most %d students\n", store.MaxRosterSeats)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "labserver roster:", err)
		return 1
	}
	fmt.Fprintf(stdout, "class %q: %d added, %d updated, %d lines skipped\n", c.Name, added, updated, len(problems))
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

// defaultDB is the database path without --db: LAB_DB, else ./rdmalab.db.
func defaultDB() string {
	if p := os.Getenv("LAB_DB"); p != "" {
		return p
	}
	return "./rdmalab.db"
}
