// Package hostexp holds the experiments that run on the host kernel and
// need no RDMA device: tcp-cost (what moving data through the kernel costs
// in CPU) and memlock (why pinning memory fails with plenty free).
//
// Learner-facing text travels in two languages: an Event's Message is the
// English text and Messages carries {"zh", "en"}; the widget picks the
// page's language.
package hostexp

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/sandbox"
)

// Register adds this package's experiments and helpers to reg.
func Register(reg *sandbox.Registry) {
	reg.Register(TCPCost())
	reg.Register(Memlock())
	reg.RegisterHelper(memlockHelperName, memlockHelper)
}

// say builds learner-facing text in both languages.
func say(en, zh string) sandbox.Text { return sandbox.Text{"en": en, "zh": zh} }

// phase emits a phase event with a bilingual title.
func phase(emit sandbox.Emitter, name string, t sandbox.Text) {
	emit.Emit(sandbox.Event{Type: sandbox.EvPhase, Name: name, Message: t["en"], Messages: t})
}

// logf emits an informational log line (English only: logs are the
// machine's voice, verdicts are the lesson's).
func logf(emit sandbox.Emitter, format string, args ...any) {
	emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: "info", Message: fmt.Sprintf(format, args...)})
}

// note emits a bilingual log line the learner should read.
func note(emit sandbox.Emitter, level string, t sandbox.Text) {
	emit.Emit(sandbox.Event{Type: sandbox.EvLog, Level: level, Message: t["en"], Messages: t})
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse MemAvailable %q: %w", v, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
}

// human formats a byte count for text ("1 MiB", "23.1 GiB").
func human(n int64) string {
	switch {
	case n >= 1<<30:
		return trimZero(float64(n)/(1<<30)) + " GiB"
	case n >= 1<<20:
		return trimZero(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return trimZero(float64(n)/(1<<10)) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

func trimZero(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}
