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

  // A token is "version {slug: hash, …}". A lesson page reloads only when
  // its own lesson's hash changed; a page with answers typed but not yet
  // submitted is never reloaded under the learner: it offers a button.
  let baseline = null; // course version seen when the page connected
  let baseHashes = null; // lesson hashes seen when the page connected
  const es = new EventSource("/api/reload");
  const m = location.pathname.match(/^\/lessons\/([^/]+)\/?$/);
  const slug = m ? decodeURIComponent(m[1]) : "";

  const parse = (data) => {
    const i = data.indexOf(" ");
    if (i < 0) return { v: data, hashes: null };
    let hashes = null;
    try { hashes = JSON.parse(data.slice(i + 1)); } catch (_) {}
    return { v: data.slice(0, i), hashes };
  };

  // dirty: the learner changed a form field since the last submit.
  let dirty = false;
  const mark = (e) => { if (e.target && e.target.closest && e.target.closest("form")) dirty = true; };
  document.addEventListener("input", mark, true);
  document.addEventListener("change", mark, true);
  document.addEventListener("submit", () => { dirty = false; }, true);

  const changed = (data) => {
    const t = parse(data);
    if (t.v === baseline) return;
    if (slug && baseHashes && t.hashes && baseHashes[slug] && t.hashes[slug] === baseHashes[slug]) {
      baseline = t.v; // another lesson changed: this page stays as it is
      return;
    }
    if (dirty) {
      offerReload();
      return;
    }
    reload();
  };

  function offerReload() {
    if (document.getElementById("lab-reload-offer")) return;
    const box = document.createElement("div");
    box.id = "lab-reload-offer";
    box.setAttribute("role", "status");
    box.setAttribute("data-testid", "reload-offer");
    box.style.cssText = "position:fixed;left:1em;bottom:1em;z-index:999;max-width:28em;padding:.8em 1em;" +
      "border-radius:8px;background:#1f2937;color:#f9fafb;box-shadow:0 4px 16px rgba(0,0,0,.3);font-size:.92rem";
    const en = document.documentElement.lang === "en";
    const text = document.createElement("span");
    text.textContent = en
      ? "This lesson was updated. Your unsubmitted answers stay until you reload. "
      : "这一课已更新。你还没提交的答案会保留，直到你刷新页面。";
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "button";
    btn.textContent = en ? "Reload now" : "立即刷新";
    btn.addEventListener("click", reload);
    box.append(text, btn);
    document.body.appendChild(box);
  }

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
    const t = parse(e.data);
    if (baseline === null) {
      baseline = t.v;
      baseHashes = t.hashes;
    } else changed(e.data);
  });
  es.addEventListener("reload", (e) => changed(e.data));
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
