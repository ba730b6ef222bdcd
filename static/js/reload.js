// Live reload: listens on /api/reload (SSE) and reloads the page when the
// course changes. Instructors also receive the current error list and see it
// as an overlay ("file:line: message") while learners keep the last good
// version. Without JavaScript or EventSource, pages simply do not reload.
(() => {
  "use strict";
  if (!("EventSource" in window)) return;

  const SCROLL_KEY = "lab-reload-scroll:" + location.pathname + location.search;

  // Restore the reading position after a reload we triggered.
  try {
    const y = sessionStorage.getItem(SCROLL_KEY);
    if (y !== null) {
      sessionStorage.removeItem(SCROLL_KEY);
      window.addEventListener("load", () => window.scrollTo(0, Number(y) || 0));
    }
  } catch (_) { /* storage disabled */ }

  let baseline = null; // course version seen when the page connected
  const es = new EventSource("/api/reload");

  const reload = () => {
    try { sessionStorage.setItem(SCROLL_KEY, String(window.scrollY)); } catch (_) {}
    es.close();
    location.reload();
  };

  // "state" arrives first on every (re)connection; a version that differs from
  // the one we first saw means the course changed while we were disconnected.
  es.addEventListener("state", (e) => {
    // Marks the page as live (tests and styles can see the stream is up).
    document.documentElement.dataset.liveReload = "on";
    const v = e.data;
    if (baseline === null) baseline = v;
    else if (v !== baseline) reload();
  });
  es.addEventListener("reload", (e) => {
    if (e.data !== baseline) reload();
  });
  es.addEventListener("errors", (e) => {
    let list = [];
    try { list = JSON.parse(e.data) || []; } catch (_) {}
    showErrors(list);
  });

  function showErrors(list) {
    let box = document.getElementById("lab-reload-errors");
    if (!list.length) {
      if (box) box.remove();
      return;
    }
    if (!box) {
      box = document.createElement("div");
      box.id = "lab-reload-errors";
      box.setAttribute("role", "alert");
      box.setAttribute("data-testid", "reload-errors");
      box.style.cssText = "position:fixed;left:0;right:0;bottom:0;z-index:1000;max-height:50vh;" +
        "overflow:auto;margin:0;padding:1em 1.25em;background:#2b0b0b;color:#ffd7d7;" +
        "font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;" +
        "border-top:3px solid #e5484d;box-shadow:0 -4px 16px rgba(0,0,0,.35)";
      document.body.appendChild(box);
    }
    box.textContent = "";
    const head = document.createElement("strong");
    head.textContent = (document.documentElement.lang === "en")
      ? "Lesson files have errors; learners still see the last good version:"
      : "课程文件有错误，学员仍看到上一个正确版本：";
    const pre = document.createElement("pre");
    pre.style.cssText = "margin:.5em 0 0;white-space:pre-wrap";
    pre.textContent = list.map((d) =>
      (d.line > 0 ? d.file + ":" + d.line : d.file) + ": " + d.message).join("\n");
    box.append(head, pre);
  }
})();
