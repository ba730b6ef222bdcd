package lessons

import (
	"strings"
	"testing"
)

// TestWriteRateCheckBlamesRightly: lesson 06's check says whose the
// failure is. A learner who wrote for too short a time is told to keep
// writing; when the learner wrote for 5 s but the lab's reference,
// ib_write_bw, overlapped too little of it (it starts late on a loaded lab
// VM: 13 chunks were seen beside make test and stress-ng), the check says
// that is the lab's and asks for a run again, in zh and en.
func TestWriteRateCheckBlamesRightly(t *testing.T) {
	course, err := Load(Builtin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var check []byte
	for _, p := range course.Lesson("06-performance").Programs {
		if p.ID == "write-rate" {
			check = p.Check
		}
	}
	if check == nil {
		t.Fatal("lesson 06 has no write-rate exercise")
	}
	report := func(win, chunks, alone string) string {
		return "reference: running\npeer on rxe1: QP 17, buffer of 64 bytes, rkey 0x1234\nconnected: yes\n" +
			"received: lesson 06: sixty-four bytes per RDMA WRITE, as fast as it goes!\n" +
			"learner: packets 52000 window_us " + win + " chunks " + chunks + " alone " + alone + "\n" +
			"rates: learner 10400 reference 8000 reference_packets 40000\n" +
			"ratio: median 1.45 low 1.38 high 1.52\n"
	}
	run := func(peer, lang string) (string, bool) {
		return runCheckScript(t, check, peer, "LAB_EXIT=0", "LAB_LANG="+lang)
	}
	for _, tc := range []struct {
		name, win, chunks, alone string
		pass                     bool
		en, zh                   string
	}{
		{"short program", "1200000", "9", "0", false, "Keep writing for SECONDS (5) seconds", "持续写 SECONDS（5）秒"},
		{"late reference", "5395000", "13", "40", false, "says nothing about your program. Run again.", "与你的程序无关。请再运行一次。"},
		{"measured", "5000000", "48", "0", true, "passed", "通过"},
	} {
		for lang, want := range map[string]string{"en": tc.en, "zh": tc.zh} {
			out, pass := run(report(tc.win, tc.chunks, tc.alone), lang)
			if pass != tc.pass || !strings.Contains(out, want) {
				t.Errorf("%s (%s): passed %v, said %q; want passed %v and %q", tc.name, lang, pass, out, tc.pass, want)
			}
		}
	}
}
