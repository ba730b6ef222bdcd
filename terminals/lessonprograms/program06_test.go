package lessonprograms

import (
	"github.com/rdmalab/rdmalab/machines/vm/vmtest"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/machines/vmproto"
)

// lesson06Programs is the guest suite of lesson 06's tuning challenge, in
// the guest TestLessonPrograms booted: the solution reaches the target
// against ib_write_bw running beside it, the starter compiles and does
// not, and a program that only prints a plausible rate fails because the
// peer saw no connection, let alone a WRITE. The check's own words carry the figures (the
// ratio's median and its 95% confidence interval); the log keeps them.
func lesson06Programs(t *testing.T, course *lessons.Course, run func(*lessons.Program, []byte, string) (vmproto.ProgramEnd, *vmtest.Events)) {
	t.Helper()
	l := course.Lesson("06-performance")
	if l == nil || len(l.Programs) < 1 || l.Programs[0].ID != "write-rate" {
		t.Fatalf("lesson 06-performance with the program write-rate: %v", l)
	}
	p := l.Programs[0]
	// The check calls a ratio whose interval straddles the target "too
	// close to call" and asks for a run again, as a learner would; when
	// the lab's reference did not start, the run says nothing of the
	// program and asks the same. On a loaded lab VM (stress-ng beside make
	// test) the CPU the two share comes and goes and the interval widens:
	// the solution gets up to four runs, and never a firm failure. The
	// starter and the program that only prints are rerun only when the
	// reference did not start.
	const tooClose = "too close to call"
	const noReference = "ib_write_bw, did not start"
	const overlapShort = "ib_write_bw, was sending beside them in only"
	runFirm := func(src []byte, lang string, retryClose bool) (vmproto.ProgramEnd, *vmtest.Events) {
		for try := 1; ; try++ {
			end, c := run(p, src, lang)
			again := strings.Contains(string(end.Check), noReference) || strings.Contains(string(end.Check), overlapShort) ||
				retryClose && !end.Passed && strings.Contains(string(end.Check), tooClose)
			if !again || try == 4 {
				return end, c
			}
			t.Logf("write-rate run %d said %q; running it again", try, lastLine(end.Check))
		}
	}
	end, _ := runFirm(p.Solution, "en", true)
	if end.Stage != "check" || !end.Passed || !strings.Contains(string(end.Check), "95% confidence interval") {
		t.Errorf("write-rate solution (en): stage %s passed %v: %s", end.Stage, end.Passed, end.Check)
	}
	// The starter is correct and slow: it compiles, runs, exits 0 and
	// fails the check, in the learner's language, with the figures.
	end, c := runFirm(p.Starter, "zh", false)
	if end.Stage != "check" || end.Passed || end.Exit != 0 || !strings.Contains(c.Text("stdout"), "WRITEs/s") {
		t.Errorf("write-rate starter (zh): stage %s exit %d passed %v, stdout %q; want it run to exit 0 and fail", end.Stage, end.Exit, end.Passed, c.Text("stdout"))
	}
	if !strings.Contains(string(end.Check), "置信区间") {
		t.Errorf("write-rate starter (zh): the check's words %q are not the zh ratio report", end.Check)
	}
	// A plausible rate printed, the peer's file read, no WRITE sent.
	fake := `#include <stdio.h>
int main(void){ char t[256] = ""; FILE *f = fopen("/run/lab-peer/target", "r");
if (f) { fgets(t, sizeof t, f); fclose(f); }
printf("peer: %s", t); puts("160000 WRITEs of 64 bytes in 5.00 s: 32000 WRITEs/s (lists of 16, 128 in flight, inline)"); return 0; }`
	end, _ = runFirm([]byte(fake), "en", false)
	if end.Stage != "check" || end.Passed || !strings.Contains(string(end.Check), "The peer saw no connection") {
		t.Errorf("write-rate, a program that only prints: stage %s passed %v, check %q; want it failed saying %q", end.Stage, end.Passed, end.Check, "The peer saw no connection")
	}
}

// lastLine is b's last line (the check's words, after its figure
// lines), for a log.
func lastLine(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
