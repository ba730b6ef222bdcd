// worthit.js answers the "is RDMA worth it for us?" helper in place: each
// change asks the server for the page with the new answers (the same GET
// the form does without JavaScript) and swaps in just the recommendation,
// so the decision rules live in one place (web/lesson_visuals.go).
(function () {
  "use strict";

  function setup(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    var form = root.querySelector("form.worth-form");
    if (!form) return;
    var seq = 0;

    async function update() {
      var n = ++seq;
      var u = new URL(form.getAttribute("action") || location.pathname, location.href);
      u.search = new URLSearchParams(new FormData(form)).toString();
      root.setAttribute("aria-busy", "true");
      try {
        var resp = await fetch(u.pathname + u.search, { credentials: "same-origin", headers: { Accept: "text/html" } });
        if (!resp.ok) throw new Error(resp.status + " " + resp.statusText);
        var doc = new DOMParser().parseFromString(await resp.text(), "text/html");
        var fresh = doc.querySelector("#" + CSS.escape(root.id) + " .worth-result");
        var old = root.querySelector(".worth-result");
        if (n !== seq || !fresh || !old) return; // a newer answer is on its way
        // Keep the live region element itself, so screen readers announce
        // the new recommendation; only its content and state change.
        old.dataset.verdict = fresh.dataset.verdict || "";
        old.dataset.tone = fresh.dataset.tone || "";
        old.replaceChildren.apply(old, Array.from(fresh.childNodes, function (c) { return document.importNode(c, true); }));
        var keep = new URL(location.href);
        new URLSearchParams(u.search).forEach(function (v, k) { keep.searchParams.set(k, v); });
        keep.hash = root.id;
        history.replaceState(history.state, "", keep.toString());
      } catch (err) {
        // The plain form still works: fall back to submitting it.
        if (n === seq) form.submit();
      } finally {
        if (n === seq) root.removeAttribute("aria-busy");
      }
    }

    form.addEventListener("change", update);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      update();
    });
  }

  function init() {
    document.querySelectorAll("section.rd-widget.worth").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
