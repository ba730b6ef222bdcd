package lessons

import (
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"
)

// TestTCPvsRDMADiagram: the drawing is well-formed markup with the hooks a
// later interactive version relies on, labelled in the page's language, and
// themed only through currentColor and CSS variables.
func TestTCPvsRDMADiagram(t *testing.T) {
	for _, tc := range []struct{ lang, tcpHead, word string }{
		{"zh", "内核 TCP", "拷贝到 socket 缓冲区"},
		{"en", "Kernel TCP", "Copy into the socket buffer"},
	} {
		out := string(tcpVsRDMA(tc.lang))
		dec := xml.NewDecoder(strings.NewReader(out))
		steps := map[string]string{} // data-step → class
		var svgs int
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v", tc.lang, err)
			}
			el, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			if el.Name.Local == "svg" {
				svgs++
			}
			var step, class string
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "data-step":
					step = a.Value
				case "class":
					class = a.Value
				case "fill", "stroke", "style":
					t.Errorf("%s: presentation attribute %s=%q: colours belong in the scoped CSS", tc.lang, a.Name.Local, a.Value)
				}
			}
			if step != "" {
				if _, dup := steps[step]; dup {
					t.Errorf("%s: data-step %q twice", tc.lang, step)
				}
				steps[step] = class
			}
		}
		if svgs != 2 {
			t.Errorf("%s: %d svg elements, want one per path", tc.lang, svgs)
		}
		var removed []string
		for id, class := range steps {
			if strings.Contains(class, "removed-by-rdma") {
				removed = append(removed, id)
			}
		}
		if len(steps) != len(tcpSteps)+len(rdmaSteps) || len(removed) != 5 {
			t.Errorf("%s: %d steps, removed-by-rdma on %v", tc.lang, len(steps), removed)
		}
		for _, id := range []string{"tcp-copy", "tcp-stack", "tcp-driver", "tcp-wakeup"} {
			if !strings.Contains(steps[id], "removed-by-rdma") {
				t.Errorf("%s: step %s should be removed-by-rdma", tc.lang, id)
			}
		}
		if !strings.Contains(out, tc.tcpHead) || !strings.Contains(out, tc.word) {
			t.Errorf("%s: labels not in the page language", tc.lang)
		}
		// Themed by the site stylesheet, not an inline <style> (the CSP
		// allows none).
		if strings.Contains(out, "<style") || strings.Contains(out, "style=") {
			t.Errorf("%s: inline style in the diagram", tc.lang)
		}
		css, err := os.ReadFile("../static/css/visuals.css")
		if err != nil || !strings.Contains(string(css), ".rd-diagram text{fill:currentColor}") ||
			!strings.Contains(string(css), "var(--diagram-removed") {
			t.Errorf("static/css/visuals.css does not theme the diagram through currentColor/CSS variables (%v)", err)
		}
	}
}
