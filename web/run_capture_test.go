package web

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

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
		Run: func(ctx context.Context, p sandbox.Params, emit sandbox.Emitter) error {
			data, err := os.ReadFile(goldenWrite)
			if err != nil {
				return err
			}
			emit.Emit(sandbox.Event{Type: sandbox.EvCapture, Message: "captured",
				Capture: &sandbox.Capture{Iface: "veth1", Packets: 4, Pcap: data, Hosts: map[string]string{"10.0.0.2": "rxe1 (requester)", "10.0.0.1": "rxe0 (responder)"}}})
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
	env := newRunEnv(t, sandbox.RunnerConfig{})
	c := env.client()
	id := env.submit(c, "capture-replay", nil)
	env.waitFinal(c, id)

	res := env.get(c, "/api/runs/"+id+"/capture")
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
	env := newRunEnv(t, sandbox.RunnerConfig{})
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
