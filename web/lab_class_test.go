package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab"
	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

func labClassServer(t *testing.T, terms rdmalab.TermHost, info TerminalInfo, limits Limits) *httptest.Server {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	var course atomic.Pointer[lessons.Course]
	course.Store(fixtureCourse())
	srv, err := New(Config{Course: course.Load, Store: db, Logger: slog.New(slog.DiscardHandler), Limits: limits,
		Lab: labFunc(func(context.Context) sandbox.Lab { return readyLab }), Terminals: terms, TermInfo: info})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); db.Close() })
	return ts
}

// termInfo is a TerminalInfo that says what a test set.
type termInfo struct {
	sz   TermSizing
	sp   TermSpares
	kept TermKept // Machines < 0: not kept
	// reclaim: ReclaimsAfter (0: the terminals' default)
	reclaim time.Duration
}

func (i termInfo) Sizing() TermSizing      { return i.sz }
func (i termInfo) Spares() TermSpares      { return i.sp }
func (i termInfo) Kept() (TermKept, bool)  { return i.kept, i.kept.Machines >= 0 }
func (i termInfo) KeepsFor() time.Duration { return 0 }

func (i termInfo) ReclaimsAfter() time.Duration { return i.reclaim }

// The terminal's page and a task check's "no terminal" say when an unused
// machine is reclaimed as the lab is set (serve --terminal-idle), in zh
// and en; 10 minutes when nothing says otherwise.
func TestReclaimTimeSaid(t *testing.T) {
	for _, tc := range []struct {
		info   TerminalInfo
		zh, en string
	}{
		{nil, "10 分钟没有按键", "after 10 minutes without a keystroke"},
		{termInfo{reclaim: 25 * time.Minute}, "25 分钟没有按键", "after 25 minutes without a keystroke"},
		{termInfo{reclaim: time.Minute}, "1 分钟没有按键", "after a minute without a keystroke"},
	} {
		srv := &Server{cfg: Config{TermInfo: tc.info}}
		d := srv.reclaimsAfter()
		for lang, want := range map[string]string{"zh": tc.zh, "en": tc.en} {
			for _, key := range []string{"term.lede", "task.noterm"} {
				if got := trf(lang, key, minutesSpan(lang, d)); !strings.Contains(got, want) {
					t.Errorf("%s %s with %v: %q; want %q in it", lang, key, d, got, want)
				}
			}
		}
	}
}

// /lab says how --terminals auto chose the cap, in the page's language.
func TestLabTerminalSizing(t *testing.T) {
	fake := &fakeTerms{max: 7, queueMax: 4, sessions: map[string]*fakeShell{}}
	ts := labClassServer(t, fake, termInfo{sz: TermSizing{Auto: true, AvailableMiB: 3000, CPUs: 2, PoolGuests: 1, ByMemory: 7, ByCPU: 50, PerGuestMiB: 160, SharedMiB: 256}}, Limits{})
	for lang, want := range map[string]string{
		"en": "0 / 7 (auto: each learner machine counted at its proportional memory (PSS), 160 MiB, the snapshot's shared memory, 256 MiB, once; 3000 MiB of available memory allows 7, 2 CPUs allow 50, with memory kept for 1 experiment guests; set --terminals to choose)",
		"zh": "0 / 7（自动：每台学员虚拟机按分摊的内存计 160 MiB，共用的快照内存 256 MiB 只计一次；可用内存 3000 MiB 允许 7 个，2 个 CPU 允许 50 个，已为 1 个实验虚拟机留出内存；用 --terminals 可手动设定）",
	} {
		if got := labDoc(t, ts, lang).Find(`[data-testid=lab-terminals]`).Text(); got != want {
			t.Errorf("%s: %q, want %q", lang, got, want)
		}
	}
	set := labClassServer(t, fake, termInfo{sz: TermSizing{}}, Limits{})
	if got := labDoc(t, set, "en").Find(`[data-testid=lab-terminals]`).Text(); got != "0 / 7" {
		t.Errorf("a cap the admin set: %q", got)
	}
}

// /lab warns when many learners write from one address (a class behind
// one NAT shares the per-address limits), and says nothing with the
// per-address limits off or with few learners.
func TestLabCrowdWarning(t *testing.T) {
	write := func(ts *httptest.Server, n int) {
		for range n { // no cookie: a new learner each time, all from loopback
			res, err := http.Post(ts.URL+"/lessons/01-one/complete", "application/x-www-form-urlencoded", nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
	}
	ts := labClassServer(t, nil, nil, Limits{})
	write(ts, crowdWarn-1)
	if n := labDoc(t, ts, "en").Find(`[data-testid=lab-crowd]`).Length(); n != 0 {
		t.Errorf("%d learners on one address: warned", crowdWarn-1)
	}
	write(ts, 3)
	for lang, want := range map[string]string{"en": "learners from one network address: 12 (127.0.0.1)", "zh": "12 位学员来自同一个网络地址（127.0.0.1）"} {
		got := labDoc(t, ts, lang).Find(`[data-testid=lab-crowd]`).Text()
		if !strings.Contains(got, want) || !strings.Contains(got, "LAB_RUNS_PER_ADDR") {
			t.Errorf("%s: %q, want %q and the setting", lang, got, want)
		}
	}
	off := labClassServer(t, nil, nil, Limits{RunsPerAddr: -1, NewLearnerBurst: -1})
	write(off, 12)
	if n := labDoc(t, off, "en").Find(`[data-testid=lab-crowd]`).Length(); n != 0 {
		t.Error("warned with the per-address limits off")
	}
}

// /lab shows the paused spares (what --spares keeps and what memory
// holds) and the kept machines' disk against their budget, in zh without
// English prose, with the learner machines' memory counted by PSS; not
// kept machines: no line.
func TestLabSparesAndKept(t *testing.T) {
	fake := &fakeTerms{max: 50, queueMax: 4, sessions: map[string]*fakeShell{}}
	ts := labClassServer(t, fake, termInfo{sp: TermSpares{Ready: 17, Starting: 1, Target: 20, Class: 20, Room: 9, Bounded: true, Guests: 18, PSS: 18 * 90 << 20, Shared: 18 * 20 << 20}, kept: TermKept{Machines: 3, Bytes: 99 << 20, TotalBytes: 4096 << 20, Evicted: 2}}, Limits{})
	for lang, want := range map[string][2]string{
		"en": {"17 ready, 1 restoring; target 20 (kept for 20 learners opening their terminals at once, less the learners in, within the places left); free memory holds 9 more learner machines; the 18 learner machines hold 1620 MiB in all (proportional memory, PSS: 90 MiB each on average, 360 MiB of it the part they share)",
			"3, taking 99 MiB of disk (of 4096 MiB in all; over it, the oldest of the network address holding the most go first; 2 removed since the start)"},
		"zh": {"17 台就绪，1 台正在恢复；目标 20 台（为 20 人同时打开终端准备，减去已在用的学员，不超过剩余名额）；可用内存还能再容纳 9 台学员虚拟机；现有 18 台学员虚拟机共占 1620 MiB 内存（按分摊计，平均每台 90 MiB，其中共用的部分共 360 MiB）",
			"3 台，占用磁盘 99 MiB（总上限 4096 MiB，超出时先删除占用最多的网络地址的最旧虚拟机；启动以来已删除 2 台）"},
	} {
		d := labDoc(t, ts, lang)
		for i, id := range []string{"lab-spares", "lab-kept"} {
			got := d.Find(`[data-testid=` + id + `]`).Text()
			if got != want[i] {
				t.Errorf("%s %s: %q, want %q", lang, id, got, want[i])
			}
			if lang == "zh" && len(zhcheck.Prose(got)) > 0 {
				t.Errorf("zh %s has English: %q", id, zhcheck.Prose(got))
			}
		}
	}
	off := labClassServer(t, fake, termInfo{sp: TermSpares{Ready: 1, Target: 1, Class: 1}, kept: TermKept{Machines: -1}}, Limits{})
	d := labDoc(t, off, "en")
	if got := d.Find(`[data-testid=lab-spares]`).Text(); got != "1 ready, 0 restoring; target 1 (kept for 1 learners opening their terminals at once, less the learners in, within the places left)" {
		t.Errorf("no memory bound: %q", got)
	}
	if d.Find(`[data-testid=lab-kept]`).Length() != 0 {
		t.Error("machines not kept, yet /lab shows a kept line")
	}
}
