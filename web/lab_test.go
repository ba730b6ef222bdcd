package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/rdmalab/rdmalab/internal/zhcheck"
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/store"
)

// labFunc is a LabSource from a function (the real sources, the vm and host
// backends, are tested in their packages).
type labFunc func(context.Context) sandbox.Lab

func (f labFunc) Lab(ctx context.Context) sandbox.Lab { return f(ctx) }

func labServer(t *testing.T, src LabSource) *httptest.Server {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	var course atomic.Pointer[lessons.Course]
	course.Store(fixtureCourse())
	srv, err := New(Config{Course: course.Load, Store: db, Lab: src, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); db.Close() })
	return ts
}

var readyLab = sandbox.Lab{
	Backend: "vm", State: "ready", Kernel: "6.1.0-56-amd64", Accel: "tcg",
	Devices: []sandbox.Device{
		{Name: "rxe0", Netdev: "veth0", GID: "::ffff:10.0.0.1", GIDIndex: 1, Counters: map[string]int64{"sent_pkts": 7, "rcvd_pkts": 3}},
		{Name: "rxe1", Netdev: "veth1", GID: "::ffff:10.0.0.2", GIDIndex: 1, Counters: map[string]int64{"sent_pkts": 3, "rcvd_pkts": 7}},
	},
}

func TestLabAPI(t *testing.T) {
	ts := labServer(t, labFunc(func(context.Context) sandbox.Lab { return readyLab }))
	res, err := http.Get(ts.URL + "/api/lab")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var got map[string]any
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"backend", "state", "kernel", "accel", "devices"} {
		if _, ok := got[k]; !ok {
			t.Errorf("/api/lab lacks %q: %v", k, got)
		}
	}
	devs := got["devices"].([]any)
	d0 := devs[0].(map[string]any)
	if d0["name"] != "rxe0" || d0["gid"] != "::ffff:10.0.0.1" || d0["netdev"] != "veth0" {
		t.Errorf("device 0: %v", d0)
	}
	if c := d0["counters"].(map[string]any); c["sent_pkts"] != float64(7) {
		t.Errorf("counters: %v", c)
	}
}

func TestLabAPIWithoutBackend(t *testing.T) {
	ts := labServer(t, nil)
	res, err := http.Get(ts.URL + "/api/lab")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got sandbox.Lab
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.State != "none" || got.Backend != "none" || got.Reason.Get("en") == "" || got.Devices == nil {
		t.Errorf("lab without backend: %+v", got)
	}
}

func labDoc(t *testing.T, ts *httptest.Server, lang string) *goquery.Document {
	t.Helper()
	res, err := http.Get(ts.URL + "/lab?lang=" + lang)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /lab: %d", res.StatusCode)
	}
	d, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLabPage(t *testing.T) {
	ts := labServer(t, labFunc(func(context.Context) sandbox.Lab { return readyLab }))
	d := labDoc(t, ts, "en")
	if s := d.Find(`[data-testid=lab-status]`).Text(); s != "Soft-RoCE lab: ready (rxe0, rxe1 on veth, kernel 6.1.0-56-amd64, TCG)" {
		t.Errorf("status line %q", s)
	}
	if n := d.Find(`[data-testid=lab-device]`).Length(); n != 2 {
		t.Errorf("%d device rows", n)
	}
	row := d.Find(`[data-testid=lab-counter][data-name=sent_pkts] td`)
	if row.Length() != 2 || row.Eq(0).Text() != "7" || row.Eq(1).Text() != "3" {
		t.Errorf("sent_pkts row: %q", row.Text())
	}
	if d.Find(`meta[http-equiv=refresh]`).Length() != 0 {
		t.Error("a ready lab page reloads itself")
	}
	if zh := labDoc(t, ts, "zh").Find("h1").Text(); zh != "Soft-RoCE 实验环境" {
		t.Errorf("zh title %q", zh)
	}
}

func TestLabPageBootingAndFailed(t *testing.T) {
	var state atomic.Pointer[sandbox.Lab]
	state.Store(&sandbox.Lab{Backend: "vm", State: "booting", Reason: sandbox.Text{"en": "booting kernel 6.1.0-56-amd64 with TCG", "zh": "用 TCG 启动内核 6.1.0-56-amd64"}})
	ts := labServer(t, labFunc(func(context.Context) sandbox.Lab { return *state.Load() }))
	d := labDoc(t, ts, "en")
	if d.Find(`meta[http-equiv=refresh]`).Length() != 1 {
		t.Error("a booting lab page does not reload itself")
	}
	if s := d.Find(`[data-testid=lab-status]`).Text(); !strings.Contains(s, "booting") {
		t.Errorf("status %q", s)
	}
	state.Store(&sandbox.Lab{Backend: "vm", State: "failed", Reason: sandbox.Detail("the guest did not boot", "虚拟机没能启动", "qemu exited: exit status 1; console:\nKernel panic")})
	d = labDoc(t, ts, "en")
	if r := d.Find(`[data-testid=lab-reason]`).Text(); !strings.Contains(r, "Kernel panic") {
		t.Errorf("failed lab shows reason %q", r)
	}
}

// Whatever state the lab is in, a zh reader gets its status and reason in
// Chinese, on /lab and in /api/lab's status_text and reason_text (issue
// 23: "cannot read RDMA devices", "booting kernel … with TCG" and "runs go
// to the workers" reached zh readers in English).
func TestLabReasonsInChinese(t *testing.T) {
	var state atomic.Pointer[sandbox.Lab]
	ts := labServer(t, labFunc(func(context.Context) sandbox.Lab { return *state.Load() }))
	bare := labServer(t, nil) // a server without an RDMA backend
	workers := readyLab
	workers.Reason = sandbox.Text{"en": "runs go to the workers", "zh": "实验交给其他机器（worker）运行"}
	for _, c := range []struct {
		ts  *httptest.Server
		lab sandbox.Lab
	}{
		{ts, readyLab},
		{ts, workers},
		{ts, sandbox.Lab{Backend: "vm", State: "booting", Reason: sandbox.Text{"en": "booting kernel 6.1.0-56-amd64 with TCG", "zh": "用 TCG 启动内核 6.1.0-56-amd64"}}},
		{ts, sandbox.Lab{Backend: "host", State: "failed", Reason: sandbox.Text{"en": "the RDMA devices of this kernel are gone", "zh": "本机内核的 RDMA 设备不见了"}}},
		{bare, sandbox.Lab{}},
	} {
		state.Store(&c.lab)
		d := labDoc(t, c.ts, "zh")
		for _, id := range []string{"lab-status", "lab-reason"} {
			if s := d.Find(`[data-testid=` + id + `]`).Text(); len(zhcheck.Prose(s)) > 0 {
				t.Errorf("%s lab: /lab?lang=zh %s %q has English %q", c.lab.State, id, s, zhcheck.Prose(s))
			}
		}
		res, err := http.Get(c.ts.URL + "/api/lab?lang=zh")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Reason     string `json:"reason"`
			StatusText string `json:"status_text"`
			ReasonText string `json:"reason_text"`
		}
		err = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{got.StatusText, got.ReasonText} {
			if len(zhcheck.Prose(s)) > 0 {
				t.Errorf("%s lab: /api/lab?lang=zh has English %q in %q", c.lab.State, zhcheck.Prose(s), s)
			}
		}
		if (got.ReasonText == "") != (got.Reason == "") {
			t.Errorf("%s lab: reason %q but reason_text %q", c.lab.State, got.Reason, got.ReasonText)
		}
	}
}
