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
