package lessons

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWriteBWScript runs lesson 01's write-bw verify script with the
// guest's /bin/sh (dash) against perftest reports and a stand-in for the
// devices' counters (BW_REPORT and SYSFS point it away from /home/learner and
// /sys): the unit it quotes is the report's (MB/sec, or Gb/sec with
// --report_gbits), a size sweep (-a) passes on its 64 KiB row, the
// client may run on rxe1, and a report the counter cannot back fails, as
// does every forged report below (counts that overflow, MTUs RoCE lacks,
// links).
func TestWriteBWScript(t *testing.T) {
	sh, err := exec.LookPath("dash")
	if err != nil {
		t.Fatal("the guest's /bin/sh is dash (apt-get install dash): ", err)
	}
	script, err := filepath.Abs("course/01-why-rdma/tasks/write-bw.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, report, dev string
		sent              int
		lang              string
		pass              bool
		want              string
	}{
		{"MB/sec", "report-mb.txt", "rxe0", 13016, "en", true, "rxe0 sent 200 RDMA WRITEs of 64 KiB at 14.87 MB/sec average (measured here"},
		{"MB/sec zh", "report-mb.txt", "rxe0", 13016, "zh", true, "平均 14.87 MB/sec（在这里测得"},
		{"--report_gbits", "report-gbits.txt", "rxe0", 12800, "en", true, "at 0.12 Gb/sec average"},
		{"-a on rxe1", "report-sweep-rxe1.txt", "rxe1", 20000, "en", true, "rxe1 sent 200 RDMA WRITEs of 64 KiB at 16.90 MB/sec"},
		{"empty report (no server)", "empty.txt", "rxe0", 13016, "en", false, "the client printed no report. Is the server running?"},
		{"empty report zh", "empty.txt", "rxe0", 13016, "zh", false, "服务端在运行吗"},
		{"no report", "absent.txt", "rxe0", 13016, "en", false, "No report in"},
		{"counter too low", "report-mb.txt", "rxe0", 12799, "en", false, "sent_pkts counter is only 12799"},
		{"no WRITEs (a forged report needs no packets)", "report-zero.txt", "rxe0", 0, "en", false, "The report says 0 WRITEs; the task asks for a run of 200"},
		{"no WRITEs zh", "report-zero.txt", "rxe0", 0, "zh", false, "报告里只有 0 个 WRITE"},
		{"counter of the other device", "report-sweep-rxe1.txt", "rxe0", 20000, "en", false, "sent_pkts counter is only 0"},
		// Hostile reports (issue 43 fall 2): 2^58 WRITEs × 64 packets
		// wrapped to 0 packets needed; 30 digits overflow dash's test; an
		// MTU no RoCE has makes one packet a message; a link makes root
		// read someone else's file.
		{"2^58 WRITEs (overflow)", "report-overflow.txt", "rxe0", 0, "en", false, "The report claims more than 1000000 WRITEs"},
		{"2^58 WRITEs zh", "report-overflow.txt", "rxe0", 0, "zh", false, "报告声称超过 1000000 个 WRITE"},
		{"30 digits of WRITEs", "report-digits.txt", "rxe0", 1 << 62, "en", false, "The report claims more than 1000000 WRITEs"},
		{"MTU 999999", "report-mtu.txt", "rxe0", 200, "en", false, "The report says MTU 999999; RoCE's MTU is one of"},
		{"MTU 999999 zh", "report-mtu.txt", "rxe0", 200, "zh", false, "报告里的 MTU 是 999999"},
		{"a link to another file", "link:report-mb.txt", "rxe0", 13016, "en", false, "is not a plain file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			report := filepath.Join("testdata/write-bw", c.report)
			if target, ok := strings.CutPrefix(c.report, "link:"); ok {
				abs, err := filepath.Abs(filepath.Join("testdata/write-bw", target))
				if err != nil {
					t.Fatal(err)
				}
				report = filepath.Join(dir, "bw.txt")
				if err := os.Symlink(abs, report); err != nil {
					t.Fatal(err)
				}
			}
			cnt := filepath.Join(dir, "class/infiniband", c.dev, "ports/1/hw_counters")
			if err := os.MkdirAll(cnt, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(cnt, "sent_pkts"), []byte(strconv.Itoa(c.sent)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sh, script)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "LAB_LANG=" + c.lang,
				"BW_REPORT=" + report, "SYSFS=" + dir}
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.pass || !strings.Contains(string(out), c.want) {
				t.Errorf("passed=%v (want %v), said:\n%s\nwant it to contain %q", err == nil, c.pass, out, c.want)
			}
		})
	}
}

// TestNVMeRDMAScript runs lesson 08's nvme-rdma verify script with dash
// against a stand-in for sysfs (SYSFS): a controller of the task's NQN
// over rdma passes; one over tcp, one of another subsystem, none, and a
// target that was never exported fail with what to do.
func TestNVMeRDMAScript(t *testing.T) {
	sh, err := exec.LookPath("dash")
	if err != nil {
		t.Fatal("the guest's /bin/sh is dash (apt-get install dash): ", err)
	}
	script, err := filepath.Abs("course/08-upper-layers/tasks/nvme-rdma.sh")
	if err != nil {
		t.Fatal(err)
	}
	const nqn = "nqn.2026-12.lab.rdmalab.task:nvme-rdma"
	for _, c := range []struct {
		name, subnqn, transport string
		exported                bool
		lang                    string
		pass                    bool
		want                    string
	}{
		{"rdma", nqn, "rdma", true, "en", true, "controller nvme0 of " + nqn + " with transport rdma (traddr=10.0.0.1,trsvcid=4421), state live"},
		{"rdma zh", nqn, "rdma", true, "zh", true, "传输为 rdma"},
		{"tcp", nqn, "tcp", true, "en", false, "but over tcp, not rdma"},
		{"another subsystem", "nqn.2026-12.lab.rdmalab:null0", "rdma", true, "en", false, "No controller of " + nqn + " is connected yet"},
		{"none", "", "", true, "zh", false, "还没有连接"},
		{"not exported", "", "", false, "en", false, "not exported in your machine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.exported {
				if err := os.MkdirAll(filepath.Join(dir, "kernel/config/nvmet/subsystems", nqn), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if c.subnqn != "" {
				ctrl := filepath.Join(dir, "class/nvme/nvme0")
				if err := os.MkdirAll(ctrl, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, v := range map[string]string{"subsysnqn": c.subnqn, "transport": c.transport, "address": "traddr=10.0.0.1,trsvcid=4421", "state": "live"} {
					if err := os.WriteFile(filepath.Join(ctrl, f), []byte(v+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			cmd := exec.Command(sh, script)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "LAB_LANG=" + c.lang, "SYSFS=" + dir}
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.pass || !strings.Contains(string(out), c.want) {
				t.Errorf("passed=%v (want %v), said:\n%s\nwant it to contain %q", err == nil, c.pass, out, c.want)
			}
		})
	}
}
