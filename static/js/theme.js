// Applies the remembered theme before first paint (loaded without defer in
// <head>, so no flash) and wires the toggle. Without JavaScript the page
// simply follows the system.
(function () {
  var d = document.documentElement, k = "lab-theme";
  try {
    var t = localStorage.getItem(k);
    if (t === "light" || t === "dark") d.dataset.theme = t;
  } catch (e) {}
  document.addEventListener("DOMContentLoaded", function () {
    var b = document.getElementById("theme-toggle");
    if (!b) return;
    b.hidden = false;
    function cur() { return d.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"); }
    function sync() { b.setAttribute("aria-pressed", cur() === "dark" ? "true" : "false"); }
    sync();
    b.addEventListener("click", function () {
      var n = cur() === "dark" ? "light" : "dark";
      d.dataset.theme = n;
      try { localStorage.setItem(k, n); } catch (e) {}
      sync();
    });
  });
})();

// Scroll regions a keyboard can reach (WCAG 2.1.1; axe-core's
// scrollable-region-focusable): a code block or table box that scrolls
// because it is wider or taller than its room gets tabindex=0 (arrow keys
// then scroll it) and a name in the page's language; one that fits loses
// them again, so a page has no tab stops that do nothing. Checked on load,
// on resize and when the page's scripts add content (a run's tables, a
// program's output).
(function () {
  var SEL = "pre, .table-scroll, .table-wrap";
  var zh = /^zh/i.test(document.documentElement.lang);
  var names = zh ? { code: "代码（可滚动）", table: "表格（可滚动）", box: "可滚动区域" }
    : { code: "Code (scrollable)", table: "Table (scrollable)", box: "Scrollable region" };
  function scrolls(e) {
    var cs = getComputedStyle(e);
    var x = /auto|scroll/.test(cs.overflowX) && e.scrollWidth > e.clientWidth + 1;
    var y = /auto|scroll/.test(cs.overflowY) && e.scrollHeight > e.clientHeight + 1;
    return x || y;
  }
  function check() {
    pending = false;
    document.querySelectorAll(SEL).forEach(function (e) {
      var ours = e.hasAttribute("data-scroll-focus");
      if (!ours && e.hasAttribute("tabindex")) return; // focusable by its own markup
      if (e.closest(".cm-editor, .xterm")) return; // the editor and terminal handle their keys
      if (scrolls(e)) {
        if (ours) return;
        e.setAttribute("data-scroll-focus", "");
        e.tabIndex = 0;
        if (!e.hasAttribute("role")) e.setAttribute("role", "group");
        if (!e.hasAttribute("aria-label") && !e.hasAttribute("aria-labelledby")) {
          e.setAttribute("aria-label", e.tagName === "PRE" ? names.code : e.querySelector("table") ? names.table : names.box);
        }
      } else if (ours) {
        e.removeAttribute("data-scroll-focus");
        e.removeAttribute("tabindex");
        if (e.getAttribute("role") === "group") e.removeAttribute("role");
        e.removeAttribute("aria-label");
      }
    });
  }
  var pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(check);
  }
  document.addEventListener("DOMContentLoaded", function () {
    check();
    addEventListener("resize", check);
    addEventListener("load", check);
    new MutationObserver(function (ms) {
      for (var i = 0; i < ms.length; i++) {
        if (!ms[i].target.closest || !ms[i].target.closest(".cm-editor, .xterm")) { soon(); return; }
      }
    }).observe(document.body, { childList: true, subtree: true, characterData: true });
  });
})();
