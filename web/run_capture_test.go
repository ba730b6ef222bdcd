package web

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/runs/runner"
	"github.com/rdmalab/rdmalab/sandbox"
	"github.com/rdmalab/rdmalab/sandbox/capture"
)

// goldenWrite is a real capture of a three-MTU RDMA WRITE in the lab's
// guest (sandbox/capture/testdata).
const goldenWrite = "../sandbox/capture/testdata/rxe-write.pcap"

// captureReplay is a test experiment that emits a stored capture as its
// "capture" event, as wire-capture does in the guest.
func captureReplay() *sandbox.Experiment {
	return &sandbox.Experiment{
		ID: "capture-replay", Title: sandbox.Text{"en": "Capture", "zh": "抓包"}, Needs: sandbox.NeedHost, Timeout: 20 * time.Second,
		Params: []sandbox.Param{{Name: "cut", Kind: sandbox.ParamInt, Min: 0, Max: 2048, Default: int64(0)}},
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			data, err := os.ReadFile(goldenWrite)
			if err != nil {
				return err
			}
			if n := int(p["cut"].(int64)); n > 0 {
				// the same packets as a capture with snap length n keeps them
				frames, err := capture.ReadPcap(data)
				if err != nil {
					return err
				}
				for i := range frames {
					frames[i].Data = frames[i].Data[:min(n, len(frames[i].Data))]
				}
				if data, err = (capture.Result{Frames: frames, Snap: n}).Pcap(); err != nil {
					return err
				}
			}
			emit.Emit(sandbox.Event{Type: sandbox.EvCapture, Message: "captured",
				Capture: &sandbox.Capture{Iface: "veth1", Packets: 4, Pcap: data, Hosts: map[string]string{"10.0.0.2": "rxe1 (requester)", "10.0.0.1": "rxe0 (responder)"},
					HostsI18n: map[string]map[string]string{"zh": {"10.0.0.2": "rxe1（请求方）", "10.0.0.1": "rxe0（响应方）"}}}})
			ok := true
			emit.Emit(sandbox.Event{Type: sandbox.EvResult, OK: &ok, Message: "captured"})
			return nil
		},
	}
}

// waitFinal reads the run's event stream to its end.
func (e *runEnv) waitFinal(c *http.Client, id string) {
	e.t.Helper()
	if _, ended := e.stream(c, id).events(e.t); !ended {
		e.t.Fatalf("run %s: the stream did not end", id)
	}
}

func TestRunCaptureAPI(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	id := env.submit(c, "capture-replay", nil)
	env.waitFinal(c, id)

	res := env.get(c, "/api/runs/"+id+"/capture?lang=en")
	var got runCaptureJSON
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != 200 {
		t.Fatalf("capture: status %d, %v", res.StatusCode, err)
	}
	res.Body.Close()
	if got.Count != 4 || len(got.Packets) != 4 || got.Iface != "veth1" || got.Pcap != "/api/runs/"+id+"/capture.pcap" {
		t.Fatalf("capture %+v", got)
	}
	first := got.Packets[0]
	if first.OpName != "RDMA WRITE First" || first.SrcName != "rxe1 (requester)" || first.ICRCOK == nil || !*first.ICRCOK {
		t.Errorf("first packet %+v", first)
	}
	var rkey *capture.Packet
	for _, f := range first.Fields {
		if f.Header == "RETH" && f.Name == "R_Key" {
			b, _ := hex.DecodeString(first.Hex[2*f.Off : 2*(f.Off+f.Len)])
			if f.Len != 4 || uint64(b[0])<<24|uint64(b[1])<<16|uint64(b[2])<<8|uint64(b[3]) != f.Value {
				t.Errorf("R_Key field %+v does not match its bytes %x", f, b)
			}
			rkey = &first
		}
	}
	if rkey == nil {
		t.Error("no RETH R_Key field")
	}

	res = env.get(c, got.Pcap)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want, _ := os.ReadFile(goldenWrite)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/vnd.tcpdump.pcap" ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "attachment") || !bytes.Equal(body, want) {
		t.Errorf("pcap: status %d, %q, %q, %d bytes (want %d)", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"), len(body), len(want))
	}

	// A run without a capture, and no run at all: 404 with a JSON error.
	other := env.submit(c, "ticks", map[string]any{"n": 1})
	env.waitFinal(c, other)
	for _, path := range []string{"/api/runs/" + other + "/capture", "/api/runs/" + other + "/capture.pcap", "/api/runs/nope/capture"} {
		res := env.get(c, path)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 404 || !strings.Contains(string(b), `"code"`) {
			t.Errorf("%s: status %d %s", path, res.StatusCode, b)
		}
	}
}

// TestCaptureViewInBrowser: the replay page of a run with a capture draws
// the packet list; a click (or the keyboard) selects a packet, a field
// lights up exactly its bytes in the hex view, and the .pcap link serves
// the stored file.
func TestCaptureViewInBrowser(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	c := env.client()
	id := env.submit(c, "capture-replay", nil)
	env.waitFinal(c, id)

	page := newBrowserPage(t)
	do, eval := page.do, page.eval
	list := `[data-testid=capture-list]`
	do(
		chromedp.Navigate(env.HTTP.URL+"/runs/"+id+"?lang=en"),
		chromedp.WaitVisible(chromedp.CSS(list+` tbody tr`)),
	)
	if n := eval(`document.querySelectorAll('` + list + ` tbody tr').length`); n != 4 {
		t.Fatalf("%d rows, want 4", n)
	}
	do(
		chromedp.Click(chromedp.CSS(list+` tbody tr[data-packet="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-field="RETH.R_Key"]`)),
		chromedp.Click(chromedp.CSS(`[data-field="RETH.R_Key"]`)),
	)
	if n := eval(`document.querySelectorAll('[data-testid=capture-hex] .cap-byte.hl').length`); n != 4 {
		t.Errorf("R_Key highlights %d bytes, want 4", n)
	}
	// the highlighted bytes start at the R_Key's offset (14+20+8+12+8 = 62)
	if n := eval(`Number(document.querySelector('[data-testid=capture-hex] .cap-byte.hl').dataset.i)`); n != 62 {
		t.Errorf("first highlighted byte %d, want 62", n)
	}
	// keyboard: ArrowDown from packet 1 selects packet 2, Enter keeps it
	do(
		chromedp.Focus(chromedp.CSS(list+` tbody tr[data-packet="1"]`)),
		chromedp.KeyEvent(kb.ArrowDown),
	)
	if n := eval(`Number(document.querySelector('` + list + ` tr[aria-selected=true]').dataset.packet)`); n != 2 {
		t.Errorf("after ArrowDown packet %d is selected, want 2", n)
	}
	if n := eval(`document.activeElement.dataset.packet === "2" ? 1 : 0`); n != 1 {
		t.Error("focus did not follow the selection")
	}
	href := page.attr(`[data-testid=capture-download]`, "href")
	if href != "/api/runs/"+id+"/capture.pcap" {
		t.Errorf("download link %q", href)
	}
	if n := eval(`document.querySelectorAll('[data-testid=capture-download][download]').length`); n != 1 {
		t.Error("the .pcap link is not a download")
	}
}

// captureLayoutJS measures the capture view inside its widget: whether the
// list and the hex view stay within the widget (scrolling inside it when
// wider), whether a hex row shows all 16 bytes, and how many packet tables
// the widget holds.
const captureLayoutJS = `(function(){
  var w = document.querySelector(".experiment[data-experiment=capture-replay]"), wr = w.getBoundingClientRect();
  var wrap = w.querySelector(".cap-list-wrap"), hex = w.querySelector("[data-testid=capture-hex]");
  function inside(e){ var r = e.getBoundingClientRect(); return r.left >= wr.left - 1 && r.right <= wr.right + 1; }
  function scrolls(e){ var o = getComputedStyle(e).overflowX; return e.scrollWidth <= e.clientWidth + 1 || o === "auto" || o === "scroll"; }
  var last = wrap.querySelector("thead th:last-child");
  wrap.scrollLeft = wrap.scrollWidth;
  var lr = last.getBoundingClientRect(), wpr = wrap.getBoundingClientRect();
  var bytes = hex.querySelectorAll(".cap-byte"), b0 = bytes[0].getBoundingClientRect(), b15 = bytes[15].getBoundingClientRect(), hr = hex.getBoundingClientRect();
  var dbg = [lr.left, lr.right, wpr.left, wpr.right, wrap.clientWidth, wrap.scrollWidth, wrap.scrollLeft].map(Math.round).join(",");
  // the wrap is the one scroller: a table scrolling on its own hid its bar below the wrap's height
  var tableScrolls = getComputedStyle(wrap.querySelector("table")).overflowX !== "visible";
  return JSON.stringify({dbg: dbg, listInside: inside(wrap), listScrolls: scrolls(wrap), lastColShown: !tableScrolls && lr.right <= wpr.right + 1 && lr.left >= wpr.left - 1,
    hexInside: inside(hex), hexScrolls: scrolls(hex), hexRowShown: b15.right <= hr.right + 1 && b0.top === b15.top,
    packetTables: w.querySelectorAll("[data-testid=capture-list]").length + Array.prototype.filter.call(w.querySelectorAll("table.exp-table"), function(t){ return /PSN/.test(t.textContent); }).length});
})()`

// The wire capture's list and hex view fit their widget at 1280 and 375
// px (issue 30, item 7: the AETH column cut off at 1280 px, 12 of 16 hex
// bytes a row, two packet tables), and a capture cut by its snap length
// says so instead of judging an ICRC it does not have (item 2).
func TestCaptureViewLayoutAndTruncation(t *testing.T) {
	env := newRunEnv(t, runner.Config{})
	widgetCourse(env, lessons.Segment{Kind: lessons.SegExperiment, ID: "capture-replay", Params: map[string]string{"cut": "128"}})
	page := newBrowserPage(t)
	w := `.experiment[data-experiment=capture-replay]`
	for _, vp := range []struct{ w, h int64 }{{1280, 900}, {375, 812}} {
		for _, lang := range []string{"en", "zh"} {
			where := fmt.Sprintf("%d px, %s", vp.w, lang)
			page.openWidget(env.HTTP.URL+"/lessons/01-one?lang="+lang, w, vp.w, vp.h)
			page.do(chromedp.Click(chromedp.CSS(w+` [data-action=run]`)),
				chromedp.WaitVisible(chromedp.CSS(w+` [data-testid=capture-list] tbody tr`)))
			// selected as a tap does (the layout is the point here, not the pointer)
			page.eval(`document.querySelector('` + w + ` [data-testid=capture-list] tbody tr[data-packet="1"]').click(), 1`)
			page.do(chromedp.WaitVisible(chromedp.CSS(w + ` [data-testid=capture-summary]`)))
			js, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](captureLayoutJS))
			if err != nil {
				t.Fatal(err)
			}
			var l struct {
				ListInside, ListScrolls, LastColShown, HexInside, HexScrolls, HexRowShown bool
				PacketTables                                                              int
			}
			if err := json.Unmarshal([]byte(js), &l); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s", where, js)
			if !l.ListInside || !l.ListScrolls || !l.LastColShown {
				t.Errorf("%s: packet list inside the widget %v, scrolls inside %v, last column reachable %v", where, l.ListInside, l.ListScrolls, l.LastColShown)
			}
			if !l.HexInside || !l.HexScrolls || vp.w == 1280 && !l.HexRowShown {
				t.Errorf("%s: hex inside the widget %v, scrolls inside %v, a 16-byte row shown whole %v", where, l.HexInside, l.HexScrolls, l.HexRowShown)
			}
			if l.PacketTables != 1 {
				t.Errorf("%s: %d packet tables, want one", where, l.PacketTables)
			}
			sum := page.text(w + ` [data-testid=capture-summary]`)
			want := map[string]string{"en": "truncated: 128 of", "zh": "截断：抓到"}[lang]
			if !strings.Contains(sum, want) || strings.Contains(sum, "ICRC") {
				t.Errorf("%s: a 128-byte cut packet's summary %q: want %q and no ICRC verdict", where, sum, want)
			}
			if n := page.eval(`document.querySelectorAll('` + w + ` [data-field^="ICRC."]').length`); n != 0 {
				t.Errorf("%s: %d ICRC fields shown for a cut packet", where, n)
			}
			row := page.text(w + ` [data-testid=capture-list] tbody tr[data-packet="1"]`)
			if lang == "zh" && (strings.Contains(row, "requester") || strings.Contains(row, "truncated")) {
				t.Errorf("zh packet row in English: %q", row)
			}
		}
	}
}
