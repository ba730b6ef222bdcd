package lessons

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
)

// builtinPeerLines are lines each built-in peer prints, every printf of
// its report (its C source in the lesson's peers/), the values as real
// runs print them (TestLessonPrograms' logs): each must read in Chinese.
// A peer's line changed here and in its .zh.yaml with its printf.
var builtinPeerLines = map[string][]string{
	"04-first-program/peers/cm-echo.c": {
		"peer on rxe1: rdma_cm server on 10.0.0.2 port 7471", "connection: established", "connection: none",
		"received: hello, peer", "received: ", "received bytes: 12", "received bytes: 0",
		"replied: pong: hello, peer", "replied: nothing", "disconnected: yes", "disconnected: no",
		"completion error: transport retry counter exceeded", "peer: listen: Address already in use",
		"peer: rdma_create_qp: Cannot allocate memory", "usage: cm-echo ADDR PORT",
	},
	"04-first-program/peers/write-target.c": {
		"peer on rxe1: QP 17, buffer of 4096 bytes, rkey 0x1a2b", "connected: yes", "connected: no",
		"received: hello, rdma", "received: ", "RTR failed", "peer: no rxe1", "peer: setup: Cannot allocate memory",
		"peer: INIT: Invalid argument", "/run/lab-peer/.connected: Permission denied",
	},
	"03-verbs-lifecycle/peers/qp-exchange.c": {
		"peer on rxe1: QP 22, PSN 7000, TCP 10.0.0.2:7472", "exchange: nothing",
		`exchange: QPN 27 PSN 1000 GID 00000000000000000000ffff0a000001 (the line: "27 1000 00000000000000000000ffff0a000001")`,
		`exchange: QPN 0 PSN 0 GID  (the line: "hello there, peer")`,
		"connected: yes", `connected: no, the line was not "QPN PSN GID"`, "connected: no, RTR/RTS failed",
		"connected: no, the reply could not be sent", "connected: no", "received: nothing",
		"receive failed: local length error", "received: hello, qp (10 bytes)", "peer: no rxe1",
		"peer: setup: Cannot allocate memory", "peer: INIT: Invalid argument", "peer: post_recv: Cannot allocate memory",
		"peer: query_gid: Invalid argument", "peer: listen: Address already in use", "usage: qp-exchange ADDR PORT",
	},
	"03-verbs-lifecycle/peers/ud-exchange.c": {
		"peer on rxe1: UD QP 25, Q_Key 0x11111111, TCP 10.0.0.2:7473", "exchange: nothing",
		`exchange: QPN 24 QKEY 0x11111111 GID 00000000000000000000ffff0a000001 (the line: "24 11111111 00000000000000000000ffff0a000001")`,
		"sent: ud token 1234abcd to QP 24", "sent: ud token 1234abcd to QP 24, failed: transport retry counter exceeded",
		`sent: nothing (no usable "QPN QKEY GID" line, or no address handle)`, "received: nothing",
		"receive failed: local length error", "received: 58 bytes from QP 24 (the learner's)", "received: 58 bytes from QP 31",
		"echo GRH: IPv4 10.0.0.1 -> 10.0.0.2", "echo payload: the token sent", "echo payload: not the token sent",
		"echo: too short to hold a 40-byte GRH area and the token", "peer: no rxe1", "peer: INIT, RTR, RTS: Invalid argument",
		"peer: /dev/urandom: No such file or directory", "usage: ud-exchange ADDR PORT",
	},
	"05-see-the-wire/peers/rnr-late.c": {
		"peer on rxe1: QP 22, PSN 7000, TCP 10.0.0.2:7474, min_rnr_timer 12", "token: 1234abcd", "exchange: nothing",
		`exchange: QPN 27 PSN 1000 GID 00000000000000000000ffff0a000001 (the line: "27 1000 00000000000000000000ffff0a000001")`,
		`exchange: QPN 0 PSN 0 GID  (the line: "hello there, peer")`,
		"connected: yes", `connected: no, the line was not "QPN PSN GID"`, "connected: no, RTR/RTS failed",
		"connected: no, the reply could not be sent", "connected: no",
		"first RNR NAK: unknown, rxe1's send_rnr_err cannot be read; the RECV timed from the answer",
		"first RNR NAK: 3 ms after the answer", "first RNR NAK: none",
		"RECV posted: 300 ms after the first RNR NAK, and ibv_post_recv failed", "RECV posted: 304 ms after the first RNR NAK",
		"RECV posted: never", "received: nothing", "receive failed: local length error", "received: token 1234abcd (15 bytes)",
		"peer: no rxe1", "peer: setup: Cannot allocate memory", "peer: INIT: Invalid argument",
		"peer: query_gid: Invalid argument", "peer: listen: Address already in use", "usage: rnr-late ADDR PORT",
	},
	"06-performance/peers/rate-target.c": {
		"reference: running", "reference: did not start", "peer on rxe1: QP 19, buffer of 64 bytes, rkey 0x1a2b",
		"connected: yes", "connected: no", "qp state: RTS", "qp state: ERR", "qp state: other", "qp state: unknown",
		"query failed: yes", "query failed: no", "learner: packets 51234 window_us 4000000 chunks 38 alone 2",
		"rates: learner 12000 reference 11800 reference_packets 48000", "ratio: median 1.02 low 0.95 high 1.08",
		"chunk ratios: 0.95 1.02 1.08", "chunk ratios:", "received: ", "received: x", "RTR failed", "peer: no rxe1",
		"peer: setup: Cannot allocate memory", "peer: INIT: Invalid argument", "/run/lab-peer/.connected: Permission denied",
	},
	"07-beyond-send-write/peers/cas-lock.c": {
		"peer on rxe1: QP 20; lock word at 0x55d0c0a01000 (rkey 0x1a2b, atomics only), counter at 0x55d0c0a02000 (rkey 0x3c4d, READ and WRITE)",
		"connected: yes", "connected: no", "peer failure: the peer's own CAS could not be posted",
		"peer failure: the peer's own CAS got no completion", "peer failure: the peer's own CAS failed: remote access error",
		"peer increments: 50", "counter: 100", "your increments: 50", "your increments: -3", "lock found held by you: 0",
		"lock found holding another value: 3 (the last: 7)", "counter changed while the peer held the lock: 0",
		"counter changed while the peer held the lock: 2 (first: 41 became 42)",
		"peer's releases that found the lock word not its own 1: 1 (the last: 0)", "lock at the end: 0", "RTR failed",
		"peer: memory: Cannot allocate memory",
	},
	"07-beyond-send-write/peers/imm-target.c": {
		"peer on rxe1: QP 21, buffer of 64 bytes, rkey 0x1a2b, 2 RECVs posted", "connected: yes", "completions: 0",
		"completion 1: status success, opcode RECV_RDMA_WITH_IMM, imm yes, imm_data 11 (ntohl), byte_len 11",
		"completion 1: status success, opcode other, imm no, imm_data 0 (ntohl), byte_len 11",
		"completion 2: status success, opcode RECV, imm no, imm_data 0 (ntohl), byte_len 5",
		"completion 2: status success, opcode other, imm yes, imm_data 7 (ntohl), byte_len 5",
		"completion 2: status Work Request Flushed Error", `buffer at completion 1: "hello, imm"`,
		`buffer at the end: ""`, `buffer at the end: "hello, imm"`, "RTR failed", "peer: post_recv: Cannot allocate memory",
	},
	"07-beyond-send-write/peers/srq-clients.c": {
		"peer on rxe1: 3 clients, QPs 22 23 24, 3 requests each", "connected: yes", "connected: no",
		"connected: client 1 could not connect to QP 30", "client 0: 3 of 3 answered", "client 2: 0 of 3 answered",
		`client 2: 2 of 3 answered; a wrong answer: "pong 1.0 1234abcd" (wanted "pong 2.0 1234abcd")`,
		"client 1: 0 of 3 answered; receive Work Request Flushed Error", "client 1: 0 of 3 answered; send RNR retry counter exceeded",
		"client 1: 0 of 3 answered; could not post request 0",
		`client 0: 1 of 3 answered; a wrong answer: "pong.0.1" (wanted "pong 0.0 1234abcd"); send RNR retry counter exceeded`,
		`client 0: 1 of 3 answered; a wrong answer: "" (wanted "pong 0.0 1234abcd"); receive remote invalid request error`,
		`client 0: 1 of 3 answered; a wrong answer: "x" (wanted "pong 0.0 1234abcd"); could not post request 2`,
		"answered: 9 of 9", "peer: client QP: Cannot allocate memory",
	},
	"09-ring-allreduce/peers/allreduce-harness.c": {
		"step 0 size 1024: 1534 us sent_pkts 48", "step 3 size 4096: 812 us sent_pkts 96 done before go",
		"few packets: size 131075 step 8: sent_pkts 12, at least 384",
		"size 131075: algbw 0.0412 GB/s busbw 0.0618 GB/s (median of 3 runs, 12718 us)",
		"size 4: algbw 1.2e-05 GB/s busbw 1.8e-05 GB/s (median of 3 runs, 1334 us)",
		"first difference: size 1024 rank 1 index 7 want 12 got 3", "first difference: size 1024 rank 1 index 7 want 12 got nan",
		"missing: size 1024 rank 1 out-0-1: not a regular file", "missing: size 1024 rank 1 out-0-1: not SIZE floats long",
		"missing: size 1024 rank 1 out-0-1: short read", "missing: size 1024 rank 1 out-0-1: No such file or directory",
		"verified: 36 of 36 results", "incomplete: 4 of 12 steps done", "harness: usage RANKS REPS SIZE...",
		"harness: 2-8 ranks, 1-5 reps, at most 4 sizes", "harness: no /dev/urandom", "harness: size 2 must be 4 to 1048576",
		"harness: write in-0-1: No space left on device", "harness: in-0-1: File exists",
	},
}

// TestBuiltinPeerReportsZh: every built-in program's peer has its Chinese
// beside it, and every line the peer prints (builtinPeerLines) reads in
// Chinese — no English prose, Chinese punctuation, the figures kept —
// while the English report (check.sh's) stays as printed.
func TestBuiltinPeerReportsZh(t *testing.T) {
	c, err := Load(Builtin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range c.Lessons {
		for _, p := range l.Programs {
			if p.Config.Peer == "" {
				continue
			}
			key := l.Slug + "/" + p.Config.Peer
			seen[key] = true
			lines, ok := builtinPeerLines[key]
			if !ok {
				t.Errorf("%s (%s): no lines of it in builtinPeerLines: add every line it prints", key, p.ID)
				continue
			}
			rep := strings.Join(lines, "\n") + "\n"
			got := p.PeerReport(rep)
			if got["en"] != rep {
				t.Errorf("%s: the English report changed: %q", key, got["en"])
			}
			zh := strings.Split(got["zh"], "\n")
			for i, line := range lines {
				if zh[i] == line {
					t.Errorf("%s: %q stays English in zh", key, line)
					continue
				}
				if pr := zhcheck.Prose(zh[i]); len(pr) > 0 {
					t.Errorf("%s: %q in zh is %q: English %q", key, line, zh[i], pr)
				}
				if lk := zhcheck.Leaks(zh[i]); len(lk) > 0 {
					t.Errorf("%s: %q in zh is %q: %q", key, line, zh[i], lk)
				}
				for _, f := range figures.FindAllString(line, -1) {
					if !strings.Contains(zh[i], f) {
						t.Errorf("%s: %q in zh is %q: %s is lost", key, line, zh[i], f)
					}
				}
			}
		}
	}
	for key := range builtinPeerLines {
		if !seen[key] {
			t.Errorf("%s: no program of the course uses it", key)
		}
	}
}

// figures are the numbers, hex values and addresses of a report line.
var figures = regexp.MustCompile(`\b(?:0x[0-9a-f]+|\d+(?:\.\d+)*)\b`)

// TestPeerReportChecks: what check says of a peer's Chinese that is
// missing or wrong, at its file and line.
func TestPeerReportChecks(t *testing.T) {
	good := "- re: 'connected: yes'\n  zh: 已连接：是\n  example: 'connected: yes'\n"
	tests := []struct{ name, zh, want string }{
		{"missing", "", "index.en.md:9: :::program x: the peer's report needs its Chinese: no 01-t/peers/p.zh.yaml"},
		{"not a list", "re: x\n", "01-t/peers/p.zh.yaml:1: must be a list"},
		{"bad re", good + "- re: 'received: (.*'\n  zh: 收到：“$1”\n  example: 'received: x'\n", "01-t/peers/p.zh.yaml:4: entry 2: re \"received: (.*\": error parsing regexp"},
		{"no example", good + "- {re: 'x', zh: 叉}\n", "01-t/peers/p.zh.yaml:4: entry 2: needs re"},
		{"unknown key", good + "- {re: 'x', zh: 叉, example: x, en: x}\n", "01-t/peers/p.zh.yaml:4: entry 2:"},
		{"example does not match", good + "- {re: 'received: (.+)', zh: 收到：$1, example: 'received:'}\n", "does not match the whole of its example"},
		{"English", good + "- {re: 'qp state: (.+)', zh: QP 状态：$1, example: 'qp state: not known'}\n", `English ["not known"]`},
		{"ASCII colon", good + "- {re: 'counter: (.+)', zh: '计数器: $1', example: 'counter: 3'}\n", "Chinese writes"},
		{"not Chinese", good + "- {re: 'x', zh: 'y', example: x}\n", `entry 2: zh "y" is not Chinese`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{
				"p/starter.c": "int main(void){return 1;}\n", "p/solution.c": "int main(void){return 0;}\n",
				"p/check.sh": "#!/bin/sh\nexit 0\n", "p/program.yaml": "peer: peers/p.c\n", "peers/p.c": "int main(void){return 0;}\n",
			}
			if tc.zh != "" {
				files["peers/p.zh.yaml"] = tc.zh
			}
			body := ":::program x p\nText.\n:::\n"
			var got []string
			for _, d := range Check(taskCourse(body, body, files), Options{}) {
				got = append(got, d.String())
			}
			if s := strings.Join(got, "\n"); !strings.Contains(s, tc.want) {
				t.Errorf("findings:\n%s\nwant one with %q", s, tc.want)
			}
		})
	}
	// The good file alone passes, and its entry does its work.
	files := map[string]string{
		"p/starter.c": "int main(void){return 1;}\n", "p/solution.c": "int main(void){return 0;}\n",
		"p/check.sh": "#!/bin/sh\nexit 0\n", "p/program.yaml": "peer: peers/p.c\n", "peers/p.c": "int main(void){return 0;}\n",
		"peers/p.zh.yaml": good,
	}
	body := ":::program x p\nText.\n:::\n"
	c, err := Load(taskCourse(body, body, files), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Lesson("01-t").Program("x").PeerReport("connected: yes\nconnected: no\n"); got["zh"] != "已连接：是\nconnected: no\n" {
		t.Errorf("zh %q", got["zh"])
	}
}
