package guestterm

import (
	"fmt"
	"testing"
)

// TestParseTrace: tracefs's text becomes "EVENT COMM PID [ARGS]" lines, the
// learner program's only (not the peer's, not a kernel worker's), with a
// return probe's value and a task name that holds dashes.
func TestParseTrace(t *testing.T) {
	raw := `# tracer: nop
#
# entries-in-buffer/entries-written: 6/6   #P:2
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
            peer-301     [000] .....    88.100000: open_device_0: (ib_uverbs_open+0x0/0x2a0 [ib_uverbs])
            prog-345     [001] .....    88.123456: open_device_0: (ib_uverbs_open+0x0/0x2a0 [ib_uverbs])
            prog-345     [001] .....    88.123999: query_gid_3: (ib_uverbs_handler_UVERBS_METHOD_QUERY_GID_ENTRY+0x0/0x1a0 [ib_uverbs])
            prog-345     [001] .....    88.200000: reg_mr_5: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_reg_mr) ret=0
            prog-345     [000] .....    88.300000: reg_mr_5: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_reg_mr) ret=-12
     kworker/1:2-77      [001] .....    88.400000: post_send_7: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_post_send) ret=0
    my-prog-name-9       [001] .....    88.500000: post_send_7: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_post_send) ret=0
`
	want := "open_device prog 345\nquery_gid prog 345\nreg_mr prog 345 ret=0\nreg_mr prog 345 ret=-12\n"
	if got := parseTrace([]byte(raw), "prog"); got != want {
		t.Errorf("parseTrace:\n got %q\nwant %q", got, want)
	}
	if got := parseTrace([]byte(raw), "my-prog-name"); got != "post_send my-prog-name 9 ret=0\n" {
		t.Errorf("a name with dashes: %q", got)
	}
}

// TestParseTraceModifyQP: ibv_modify_qp is one line, the state and mask
// the device got (ib_core's entry) joined with the system call's answer,
// per task; a request uverbs refused before the device has a ret alone.
func TestParseTraceModifyQP(t *testing.T) {
	if traceProbes[10].event != "modify_qp" || traceProbes[10].kind != "p" || traceProbes[11].kind != "r" {
		t.Fatalf("probes 10 and 11 are %v and %v, want modify_qp's entry and return", traceProbes[10], traceProbes[11])
	}
	raw := `            prog-345     [001] .....    90.000001: modify_qp_10: (ib_modify_qp_with_udata+0x0/0x40 [ib_core]) state=1 mask=0x31
            peer-301     [000] .....    90.000002: modify_qp_10: (ib_modify_qp_with_udata+0x0/0x40 [ib_core]) state=2 mask=0x1e1
            prog-345     [001] .....    90.000003: modify_qp_11: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_modify_qp) ret=0
            peer-301     [000] .....    90.000004: modify_qp_11: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_modify_qp) ret=0
            prog-345     [001] .....    90.000005: modify_qp_10: (ib_modify_qp_with_udata+0x0/0x40 [ib_core]) state=2 mask=0x1e1
            prog-345     [001] .....    90.000006: modify_qp_11: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_modify_qp) ret=-22
            prog-345     [001] .....    90.000007: modify_qp_11: (ib_uverbs_write+0x2c5/0x4b0 [ib_uverbs] <- ib_uverbs_modify_qp) ret=-22
            prog-345     [001] .....    90.000008: modify_qp_10: (ib_modify_qp_with_udata+0x0/0x40 [ib_core]) state=3 mask=0x12d81
`
	want := "modify_qp prog 345 state=1 mask=0x31 ret=0\n" +
		"modify_qp prog 345 state=2 mask=0x1e1 ret=-22\n" +
		"modify_qp prog 345 ret=-22\n" +
		"modify_qp prog 345 state=3 mask=0x12d81\n"
	if got := parseTrace([]byte(raw), "prog"); got != want {
		t.Errorf("parseTrace:\n got %q\nwant %q", got, want)
	}
}

// TestParseTraceCreateQP: ibv_create_qp is one line, the SRQ the device
// got (ib_core's entry) joined with the system call's answer, whichever
// of the two return probes (write() command, ioctl method) answered.
func TestParseTraceCreateQP(t *testing.T) {
	entry, ret := -1, -1
	for i, p := range traceProbes {
		if p.event == "create_qp" && p.kind == "p" {
			entry = i
		}
		if p.event == "create_qp" && p.kind == "r" && ret < 0 {
			ret = i
		}
	}
	if entry < 0 || ret < 0 || !joined("create_qp") {
		t.Fatalf("create_qp has no entry (%d) or no return probe (%d)", entry, ret)
	}
	raw := fmt.Sprintf(`            prog-345     [001] .....    91.000001: create_qp_%[1]d: (ib_create_qp_user+0x0/0x40 [ib_core]) srq=0xffff888003a1c000
            prog-345     [001] .....    91.000002: create_qp_%[2]d: (ib_uverbs_run_method+0x1/0x2 [ib_uverbs] <- x) ret=0
            prog-345     [001] .....    91.000003: create_qp_%[1]d: (ib_create_qp_user+0x0/0x40 [ib_core]) srq=0x0
            prog-345     [001] .....    91.000004: create_qp_%[2]d: (ib_uverbs_run_method+0x1/0x2 [ib_uverbs] <- x) ret=0
            prog-345     [001] .....    91.000005: create_qp_%[2]d: (ib_uverbs_run_method+0x1/0x2 [ib_uverbs] <- x) ret=-22
`, entry, ret)
	want := "create_qp prog 345 srq=0xffff888003a1c000 ret=0\n" +
		"create_qp prog 345 srq=0x0 ret=0\n" +
		"create_qp prog 345 ret=-22\n"
	if got := parseTrace([]byte(raw), "prog"); got != want {
		t.Errorf("parseTrace:\n got %q\nwant %q", got, want)
	}
}
