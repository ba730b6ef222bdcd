package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// focusableJS lists the controls a keyboard user must be able to reach:
// visible, enabled, not taken out of the tab order. A radio group counts
// once (Tab enters a group at one radio; arrows move inside it).
const focusableJS = `(function(){
  var sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]';
  var seen = {}, out = [];
  document.querySelectorAll(sel).forEach(function(e){
    if (e.disabled || e.tabIndex < 0 || e.closest('[inert],[hidden]')) return;
    var r = e.getClientRects();
    if (!r.length || (r[0].width < 2 && r[0].height < 2)) return;
    if (getComputedStyle(e).visibility === 'hidden') return;
    var d = e.closest('details');
    if (d && !d.open && e.tagName !== 'SUMMARY') return;
    var key = e.type === 'radio' ? (e.form ? Array.prototype.indexOf.call(document.forms, e.form) : -1) + ':' + e.name : null;
    if (key) { if (seen[key]) { e.dataset.e2eGroup = key; return; } seen[key] = true; e.dataset.e2eGroup = key; }
    e.dataset.e2eIdx = out.length;
    out.push(e);
  });
  window.__e2eFocusables = out;
  return out.length;
})()`

// describeJS names an element for a failure message.
const describeJS = `function(e){ var s = e.tagName.toLowerCase(); if (e.id) s += '#' + e.id;
  if (e.name) s += '[name=' + e.name + ']'; if (e.getAttribute && e.getAttribute('href')) s += '[href=' + e.getAttribute('href') + ']';
  var t = (e.textContent || e.value || '').trim().replace(/\s+/g, ' ').slice(0, 40); return t ? s + ' "' + t + '"' : s; }`

// TestAccessibilityLesson01 checks lesson 01 by hand where axe-core
// (TestAxe) cannot: keyboard access (every
// control reachable with Tab, with a visible focus indicator; the theme
// toggle works from the keyboard), labels on every input, WCAG AA text
// contrast in both themes (computed styles), and no horizontal scrolling on
// a 375 px wide screen, in both languages.
func TestAccessibilityLesson01(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	b.open(lesson01EN)
	b.waitFor("widgets ready", `document.querySelector(".rd-controls") && document.querySelector("section.calc[data-ready]")`, stepTimeout)
	b.waitFor("page settled", settledJS, stepTimeout)

	// Keyboard: Tab from the top through the whole page.
	want := eval[int](b, focusableJS)
	if want < 50 {
		t.Fatalf("only %d focusable controls found on lesson 01; the page did not render its widgets?", want)
	}
	b.do("record focus", evalVoid(`(function(){
		window.__e2eFocused = {}; window.__e2eNoRing = [];
		var describe = `+describeJS+`;
		document.addEventListener('focusin', function(ev){
			var e = ev.target, k = e.dataset.e2eGroup || e.dataset.e2eIdx;
			if (e.dataset.e2eGroup) { window.__e2eFocused['g:' + e.dataset.e2eGroup] = true; }
			if (e.dataset.e2eIdx !== undefined) window.__e2eFocused[e.dataset.e2eIdx] = true;
			var cs = getComputedStyle(e);
			var ring = (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== 'none';
			if (!ring) window.__e2eNoRing.push(describe(e));
		});
		document.activeElement && document.activeElement.blur();
		window.scrollTo(0, 0);
	})()`))
	// One Tab per step: as one step, the ~145 key presses shared one step
	// timeout, and on a loaded machine they took 40 s and more (41 s with
	// Chromium's CPU slowed 30×), so the test failed for time, not access.
	for i := 0; i < want+15; i++ {
		b.do(fmt.Sprintf("Tab %d of %d", i+1, want+15), chromedp.KeyEvent(kb.Tab))
	}
	missed := eval[[]string](b, `(function(){ var describe = `+describeJS+`;
		return window.__e2eFocusables.filter(function(e){
			if (e.dataset.e2eGroup) return !window.__e2eFocused['g:' + e.dataset.e2eGroup];
			return !window.__e2eFocused[e.dataset.e2eIdx];
		}).map(describe); })()`)
	if len(missed) > 0 {
		t.Errorf("%d of %d controls were never reached with Tab:\n  %s", len(missed), want, strings.Join(limit(missed, 20), "\n  "))
	}
	if noRing := eval[[]string](b, `window.__e2eNoRing`); len(noRing) > 0 {
		t.Errorf("%d controls show no focus indicator (outline or box-shadow) when focused:\n  %s", len(noRing), strings.Join(limit(uniq(noRing), 20), "\n  "))
	}

	// Labels: every form control has an accessible name; so do buttons and links.
	unlabelled := eval[[]string](b, `(function(){ var describe = `+describeJS+`, bad = [];
		function named(e){
			if ((e.getAttribute('aria-label') || '').trim()) return true;
			var lb = e.getAttribute('aria-labelledby');
			if (lb && lb.split(/\s+/).some(function(id){ var x = document.getElementById(id); return x && x.textContent.trim(); })) return true;
			if (e.labels && Array.prototype.some.call(e.labels, function(l){ return l.textContent.trim(); })) return true;
			if ((e.getAttribute('title') || '').trim()) return true;
			return false;
		}
		document.querySelectorAll('input:not([type=hidden]), select, textarea').forEach(function(e){ if (!named(e)) bad.push(describe(e)); });
		document.querySelectorAll('button, a[href]').forEach(function(e){
			if (!e.textContent.trim() && !named(e) && !e.querySelector('img[alt]:not([alt=""])')) bad.push(describe(e));
		});
		return bad; })()`)
	if len(unlabelled) > 0 {
		t.Errorf("%d controls have no accessible name:\n  %s", len(unlabelled), strings.Join(limit(unlabelled, 20), "\n  "))
	}

	// Contrast in the light theme, then switch to dark with the keyboard.
	checkContrast(t, b, "light")
	b.do("focus the theme toggle", chromedp.Focus(chromedp.CSS("#theme-toggle")))
	b.do("press Enter", chromedp.KeyEvent(kb.Enter))
	if th := eval[string](b, `document.documentElement.dataset.theme || ""`); th != "dark" {
		t.Fatalf("Enter on the theme toggle gave theme %q, want dark", th)
	}
	checkContrast(t, b, "dark")

	// A 375 px phone: nothing may scroll sideways, in either language.
	b.do("375 px viewport", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile))
	for _, lang := range []string{"en", "zh"} {
		b.open("/lessons/" + lesson01 + "?lang=" + lang)
		b.waitFor("widgets ready", `document.querySelector(".rd-controls") && document.querySelector("section.calc[data-ready]")`, stepTimeout)
		w := eval[map[string]float64](b, `({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth, inner: innerWidth})`)
		if w["client"] > 376 {
			t.Errorf("%s: the viewport is %v px wide, not a 375 px phone", lang, w["client"])
		}
		if w["scroll"] > w["client"]+1 {
			wide := eval[[]string](b, `(function(){ var describe = `+describeJS+`, cw = document.documentElement.clientWidth, out = [];
				document.querySelectorAll('body *').forEach(function(e){
					var r = e.getBoundingClientRect(); if (r.right <= cw + 1 || r.width === 0) return;
					for (var p = e.parentElement; p; p = p.parentElement) { var o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return; }
					out.push(describe(e) + ' right=' + Math.round(r.right));
				}); return out; })()`)
			t.Errorf("%s at 375 px: the page is %v px wide (scrolls sideways); too wide:\n  %s", lang, w["scroll"], strings.Join(limit(wide, 15), "\n  "))
		}
	}
}

// checkContrast computes the WCAG contrast of every visible piece of text
// on the page against the background behind it (4.5:1, or 3:1 for large
// text), SVG text included (its fill and fill-opacity).
func checkContrast(t *testing.T, b *browser, theme string) {
	t.Helper()
	b.do("contrast library", evalVoid(contrastLibJS))
	// Let the theme's colours settle (no transitions on colours, but be sure).
	b.waitFor(theme+" theme applied", `getComputedStyle(document.body).backgroundColor !== ""`, stepTimeout)
	type finding struct {
		Where string  `json:"where"`
		Ratio float64 `json:"ratio"`
		Need  float64 `json:"need"`
		FG    string  `json:"fg"`
		BG    string  `json:"bg"`
	}
	bad := eval[[]finding](b, `(function(){ var describe = `+describeJS+`, out = [], checked = 0;
		var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		var done = new Set();
		for (var n = walker.nextNode(); n; n = walker.nextNode()) {
			var e = n.parentElement;
			if (!e || done.has(e) || !n.textContent.trim()) continue;
			done.add(e);
			if (e.closest('script,style,noscript,template,[hidden],[aria-hidden=true]')) continue;
			if (e.closest('button:disabled, input:disabled, select:disabled')) continue; // inactive controls are exempt
			var d = e.closest('details'); if (d && !d.open && !e.closest('summary')) continue;
			var r = e.getClientRects(); if (!r.length || r[0].width < 2 || r[0].height < 2) continue;
			var cs = getComputedStyle(e);
			if (cs.visibility === 'hidden') continue;
			var size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight, 10) >= 700;
			var large = size >= 24 || (bold && size >= 18.66);
			var ratio, fg = cs.color;
			if (e instanceof SVGElement) {
				// SVG text is painted with fill; fill-opacity fades it.
				var probe = document.createElement('span');
				probe.style.color = cs.fill; probe.style.opacity = cs.fillOpacity;
				var svg = e.ownerSVGElement || e; svg.parentElement.appendChild(probe);
				ratio = window.__e2eContrast(probe); fg = cs.fill + ' @' + cs.fillOpacity;
				probe.remove();
			} else {
				ratio = window.__e2eContrast(e);
			}
			checked++;
			var need = large ? 3 : 4.5;
			if (ratio < need - 0.005) out.push({where: describe(e), ratio: Math.round(ratio*100)/100, need: need, fg: fg, bg: ''});
		}
		window.__e2eChecked = checked;
		return out; })()`)
	checked := eval[int](b, `window.__e2eChecked`)
	if checked < 100 {
		t.Errorf("%s theme: only %d text elements checked; the page is not what it should be", theme, checked)
	}
	if len(bad) > 0 {
		var lines []string
		for _, f := range bad {
			lines = append(lines, fmt.Sprintf("%.2f < %.1f  %s (text %s)", f.Ratio, f.Need, f.Where, f.FG))
		}
		t.Errorf("%s theme: %d of %d text elements lack contrast:\n  %s", theme, len(bad), checked, strings.Join(limit(uniq(lines), 25), "\n  "))
	}
}

func limit(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… and %d more", len(s)-n))
	}
	return s
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
