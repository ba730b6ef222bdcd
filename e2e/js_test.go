package e2e

import "github.com/chromedp/chromedp"

// chromedpClick clicks the first visible match of a CSS selector.
func chromedpClick(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)
}

// luminanceJS is a JavaScript function: CSS colour string (as computed
// styles give it, "rgb(…)"/"rgba(…)") → WCAG relative luminance, or -1.
const luminanceJS = `(function(c){
  var m = /rgba?\(([^)]+)\)/.exec(c); if (!m) return -1;
  var p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
  function lin(v){ v /= 255; return v <= 0.04045 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); }
  return 0.2126*lin(p[0]) + 0.7152*lin(p[1]) + 0.0722*lin(p[2]);
})`

// contrastLibJS defines window.__e2eContrast(el): the WCAG contrast ratio of
// el's text colour against the background actually behind it, found by
// walking up to the first ancestor with a non-transparent background and
// compositing translucent layers on the way (text opacity included).
const contrastLibJS = `(function(){
  if (window.__e2eContrast) return;
  function parse(c){
    var m = /rgba?\(([^)]+)\)/.exec(c); if (!m) return null;
    var p = m[1].split(/[\s,\/]+/).filter(Boolean).map(function(x){ return x.endsWith("%") ? parseFloat(x)/100 : Number(x); });
    return {r:p[0], g:p[1], b:p[2], a: p.length > 3 ? p[3] : 1};
  }
  function over(top, bottom){ // composite top over an opaque bottom
    return {r: top.r*top.a + bottom.r*(1-top.a), g: top.g*top.a + bottom.g*(1-top.a), b: top.b*top.a + bottom.b*(1-top.a), a: 1};
  }
  function lin(v){ v /= 255; return v <= 0.04045 ? v/12.92 : Math.pow((v+0.055)/1.055, 2.4); }
  function lum(c){ return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b); }
  function background(el){
    var layers = [];
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) {
      var c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    var bg = {r:255, g:255, b:255, a:1}; // the canvas behind everything
    if (layers.length && layers[layers.length-1].a >= 1) bg = layers.pop();
    for (var i = layers.length-1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  }
  function opacity(el){
    var o = 1;
    for (var e = el; e && e.nodeType === 1; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity);
    return o;
  }
  window.__e2eContrast = function(el){
    var bg = background(el);
    var fg = parse(getComputedStyle(el).color);
    fg.a *= opacity(el);
    var f = over(fg, bg);
    var l1 = lum(f), l2 = lum(bg);
    return (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
  };
})()`

// evalVoid runs JavaScript for its effect.
func evalVoid(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](expr)
}
