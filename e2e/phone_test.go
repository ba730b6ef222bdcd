package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// On a 375 px phone the diagram's step controls stay next to the box they
// move: after each Next, the highlighted box and the Next button are both
// on screen (issue 14 found them two screens apart).
func TestDiagramControlsNearTheBoxOnAPhone(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.do("375 px viewport", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	for _, lang := range []string{"zh", "en"} {
		b.open("/lessons/" + lesson01 + "?lang=" + lang)
		b.waitFor("diagram controls", `document.querySelector("[data-testid=diagram-controls]")`, stepTimeout)
		b.do("scroll to the diagram", evalVoid(`document.querySelector("figure[data-diagram=tcp-vs-rdma]").scrollIntoView()`))
		for i := range 6 {
			b.click(".rd-controls .rd-next")
			pos := eval[map[string]float64](b, `(function(){
				var g = document.querySelector("figure[data-diagram=tcp-vs-rdma] g.step.is-current").getBoundingClientRect();
				var n = document.querySelector(".rd-controls .rd-next").getBoundingClientRect();
				return {boxTop: g.top, boxBottom: g.bottom, nextTop: n.top, nextBottom: n.bottom, h: innerHeight};
			})()`)
			if pos["boxTop"] < 0 || pos["boxBottom"] > pos["h"] || pos["nextTop"] < 0 || pos["nextBottom"] > pos["h"] {
				t.Errorf("%s, step %d: box %.0f–%.0f px, Next %.0f–%.0f px, screen %.0f px: not both on screen",
					lang, i+2, pos["boxTop"], pos["boxBottom"], pos["nextTop"], pos["nextBottom"], pos["h"])
			}
			if pos["boxBottom"] > pos["nextTop"]+1 && pos["boxTop"] < pos["nextBottom"] {
				t.Errorf("%s, step %d: the controls cover the highlighted box", lang, i+2)
			}
		}
	}
}
