// diagram.js makes the TCP vs RDMA drawing step-through: a path switch
// (kernel TCP / RDMA), Previous / Next / Play buttons and a live line that
// says where the message is and, for the steps RDMA removes, what that step
// costs. Everything it shows comes from the server-rendered step list under
// the drawing (which is what a reader without JavaScript gets), so the two
// never disagree. Keyboard: the buttons are real buttons; ← → step, Home
// and End jump, anywhere inside the controls.
(function () {
  "use strict";

  var PLAY_MS = 1800;

  function fill(tpl, kv) {
    return String(tpl || "").replace(/\{(\w+)\}/g, function (m, k) {
      return k in kv ? String(kv[k]) : m;
    });
  }

  function button(text, cls) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = cls;
    b.textContent = text;
    return b;
  }

  function setup(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    var S = {};
    try { S = JSON.parse(root.dataset.strings || "{}"); } catch (e) { S = {}; }
    var figure = root.querySelector(".rd-diagram");
    if (!figure) return;

    // The trip of one message on each path: the on-path steps, in order.
    var paths = {};
    root.querySelectorAll(".rd-steps ol[data-path]").forEach(function (ol) {
      var steps = [];
      ol.querySelectorAll("li[data-step]").forEach(function (li) {
        if (li.classList.contains("bypass")) return; // not on the data path
        steps.push({
          id: li.dataset.step,
          li: li,
          removed: li.classList.contains("removed"),
          zone: text(li, ".zone"),
          title: text(li, ".title"),
          detail: text(li, ".detail"),
          cost: text(li, ".cost"),
        });
      });
      paths[ol.dataset.path] = steps;
    });
    if (!paths.tcp || !paths.rdma) return;

    var state = { path: "tcp", i: 0, timer: null };

    // Controls, inserted between the drawing and the step list.
    var bar = document.createElement("div");
    bar.className = "rd-controls";
    bar.setAttribute("role", "group");
    bar.setAttribute("aria-label", S.controls || "");
    bar.dataset.testid = "diagram-controls";

    var pathGroup = document.createElement("span");
    pathGroup.className = "rd-group";
    pathGroup.setAttribute("role", "group");
    var pathLabel = document.createElement("span");
    pathLabel.className = "rd-label";
    pathLabel.id = "rd-path-label-" + Math.random().toString(36).slice(2, 8);
    pathLabel.textContent = S.path || "";
    pathGroup.setAttribute("aria-labelledby", pathLabel.id);
    var pathButtons = {};
    ["tcp", "rdma"].forEach(function (p) {
      var b = button(S["path." + p] || p, "rd-path");
      b.dataset.path = p;
      b.addEventListener("click", function () { stop(); choose(p, 0); });
      pathButtons[p] = b;
      pathGroup.appendChild(b);
    });

    var nav = document.createElement("span");
    nav.className = "rd-group";
    var prev = button(S.prev || "◀", "rd-prev");
    var next = button(S.next || "▶", "rd-next");
    var play = button(S.play || "Play", "rd-play");
    play.setAttribute("aria-pressed", "false");
    prev.addEventListener("click", function () { stop(); keepFocus(function () { go(state.i - 1); }); });
    next.addEventListener("click", function () { stop(); keepFocus(function () { go(state.i + 1); }); });
    play.addEventListener("click", function () { state.timer ? stop() : start(); });
    nav.appendChild(prev);
    nav.appendChild(next);
    nav.appendChild(play);

    bar.appendChild(pathLabel);
    bar.appendChild(pathGroup);
    bar.appendChild(nav);

    var now = document.createElement("p");
    now.className = "rd-now";
    now.setAttribute("aria-live", "polite");
    now.dataset.testid = "diagram-now";
    var keys = document.createElement("p");
    keys.className = "rd-keys";
    keys.textContent = S.keys || "";

    var list = root.querySelector(".rd-steps");
    root.insertBefore(bar, list);
    root.insertBefore(now, list);
    root.insertBefore(keys, list);
    figure.classList.add("is-stepping");

    bar.addEventListener("keydown", function (e) {
      var steps = paths[state.path];
      var to = null;
      switch (e.key) {
        case "ArrowLeft": to = state.i - 1; break;
        case "ArrowRight": to = state.i + 1; break;
        case "Home": to = 0; break;
        case "End": to = steps.length - 1; break;
        default: return;
      }
      e.preventDefault();
      stop();
      keepFocus(function () { go(to); });
    });

    // keepFocus runs a change started from the controls; if it disabled
    // the focused button (first or last step), focus moves to the other
    // one, so a keyboard user is never dropped back to the page top.
    function keepFocus(change) {
      var inBar = bar.contains(document.activeElement);
      change();
      var a = document.activeElement;
      if (inBar && (!bar.contains(a) || a.disabled)) (next.disabled ? prev : next).focus();
    }

    function text(li, sel) {
      var e = li.querySelector(sel);
      return e ? e.textContent.trim() : "";
    }

    function choose(p, i) {
      state.path = p;
      go(i);
    }

    function go(i) {
      var steps = paths[state.path];
      state.i = Math.max(0, Math.min(steps.length - 1, i));
      render();
    }

    function start() {
      var steps = paths[state.path];
      if (state.i >= steps.length - 1) go(0);
      play.setAttribute("aria-pressed", "true");
      play.textContent = S.pause || "Pause";
      state.timer = setInterval(function () {
        if (state.i >= paths[state.path].length - 1) { stop(); return; }
        go(state.i + 1);
      }, PLAY_MS);
    }

    function stop() {
      if (!state.timer) return;
      clearInterval(state.timer);
      state.timer = null;
      play.setAttribute("aria-pressed", "false");
      play.textContent = S.play || "Play";
    }

    function render() {
      var steps = paths[state.path];
      var cur = steps[state.i];
      Object.keys(pathButtons).forEach(function (p) {
        pathButtons[p].setAttribute("aria-pressed", p === state.path ? "true" : "false");
      });
      prev.disabled = state.i === 0;
      next.disabled = state.i === steps.length - 1;

      figure.querySelectorAll("svg[data-path]").forEach(function (svg) {
        svg.classList.toggle("is-inactive", svg.dataset.path !== state.path);
      });
      figure.querySelectorAll("g.step").forEach(function (g) {
        g.classList.remove("is-current", "is-past", "is-future");
      });
      root.querySelectorAll(".rd-steps li.is-current").forEach(function (li) { li.classList.remove("is-current"); });
      steps.forEach(function (s, k) {
        var g = figure.querySelector('g.step[data-step="' + s.id + '"]');
        if (!g) return;
        g.classList.add(k < state.i ? "is-past" : k === state.i ? "is-current" : "is-future");
      });
      cur.li.classList.add("is-current");
      showCurrent(figure.querySelector('g.step[data-step="' + cur.id + '"]'));

      now.textContent = "";
      now.classList.toggle("is-removed", cur.removed);
      now.dataset.step = cur.id;
      var count = document.createElement("span");
      count.className = "rd-count";
      count.textContent = fill(S.stepof, { n: state.i + 1, total: steps.length }) + " · " + cur.zone;
      var title = document.createElement("strong");
      title.textContent = cur.title;
      now.appendChild(count);
      now.appendChild(title);
      now.appendChild(document.createTextNode(" — " + cur.detail));
      if (cur.cost) {
        var cost = document.createElement("span");
        cost.className = "rd-cost";
        cost.dataset.testid = "diagram-cost";
        cost.textContent = cur.cost;
        now.appendChild(cost);
      }
      if (state.i === steps.length - 1) {
        var sum = document.createElement("span");
        sum.className = "rd-summary";
        var removed = paths.tcp.filter(function (s) { return s.removed; }).length;
        sum.textContent = state.path === "tcp"
          ? fill(S.sumtcp, { removed: removed, total: paths.tcp.length })
          : S.sumrdma || "";
        now.appendChild(sum);
      }
    }

    var rendered = false;
    // showCurrent keeps the highlighted box on screen on a phone, where the
    // drawing is taller than the screen and the controls stick to its
    // bottom edge: a step far from view scrolls into the space above them.
    function showCurrent(g) {
      if (!rendered) { rendered = true; return; } // not on page load
      if (!g || !window.matchMedia || !window.matchMedia("(max-width: 640px)").matches) return;
      var r = g.getBoundingClientRect(), barTop = bar.getBoundingClientRect().top;
      var bottom = Math.min(window.innerHeight, barTop > 0 ? barTop : window.innerHeight);
      if (r.top >= 0 && r.bottom <= bottom) return;
      window.scrollBy(0, r.top - Math.max(8, (bottom - r.height) / 2));
    }

    render();
  }

  function init() {
    document.querySelectorAll(".rd-interactive[data-interactive]").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
