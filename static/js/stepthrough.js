// rdmalab step-through widget: an interactive run (the verbs lifecycle).
// Start submits the run; every step event it streams becomes a card (the
// call's C code, what the device returned, what it means) and says which
// commands the run accepts next; those buttons send POST
// /api/runs/{id}/commands {"cmd": …}. The run keeps its verbs objects
// between steps and frees them at teardown, on Cancel, or when left idle.
// Every control is a button: Tab reaches it, Enter or Space presses it, and
// after each step the focus moves to the button most learners want next.
(function () {
  "use strict";
  if (window.rdmalabStepThrough) return;
  window.rdmalabStepThrough = true;

  function h(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }

  function fmt(s) {
    var args = Array.prototype.slice.call(arguments, 1), i = 0;
    return String(s).replace(/%[ds]/g, function () { return String(args[i++]); });
  }

  function ST(root) {
    this.root = root;
    this.lang = root.dataset.lang || "zh";
    try { this.s = JSON.parse(root.dataset.strings || "{}"); } catch (e) { this.s = {}; }
    this.exp = root.dataset.experiment;
    this.startBtn = root.querySelector('[data-action="start"]');
    this.cancelBtn = root.querySelector('[data-action="cancel"]');
    this.replay = root.querySelector(".exp-replay");
    this.cmdBtns = Array.prototype.slice.call(root.querySelectorAll("[data-cmd]"));
    this.statusEl = root.querySelector(".st-status");
    this.list = root.querySelector(".st-steps");
    this.lab = root.querySelector("[data-lab-status]");
    this.key = "rdmalab.steps." + this.exp;
    this.runID = null;
    this.es = null;
    this.pending = "";
    this.bind();
    this.watchLab();
    this.resume();
  }

  ST.prototype.t = function (k) { return this.s[k] || k; };

  ST.prototype.say = function (text) { this.statusEl.textContent = text; };

  ST.prototype.bind = function () {
    var w = this;
    this.startBtn.addEventListener("click", function () { w.start(); });
    this.cancelBtn.addEventListener("click", function () { w.cancel(); });
    this.cmdBtns.forEach(function (b) {
      b.addEventListener("click", function () { w.send(b.dataset.cmd); });
    });
  };

  // watchLab enables Start once the Soft-RoCE lab is ready (GET /api/lab).
  ST.prototype.watchLab = function () {
    var w = this;
    var poll = function () {
      fetch("/api/lab", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (lab) {
        var st = lab.state || "none";
        w.lab.dataset.state = st;
        if (st === "ready") w.lab.textContent = w.t("steps.lab.ready");
        else if (st === "booting") w.lab.textContent = w.t("steps.lab.booting");
        else w.lab.textContent = fmt(w.t(st === "failed" ? "steps.lab.failed" : "steps.lab.none"), lab.reason_text || lab.reason || "");
        if (!w.runID) w.startBtn.disabled = st !== "ready" && st !== "booting";
        if (st === "booting") setTimeout(poll, 3000);
      }).catch(function () { if (!w.runID) w.startBtn.disabled = false; });
    };
    poll();
  };

  // resume re-attaches to this learner's run of the widget after a reload.
  ST.prototype.resume = function () {
    var w = this, id;
    try { id = localStorage.getItem(this.key); } catch (e) { return; }
    if (!id) return;
    fetch("/api/runs/" + encodeURIComponent(id), { credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.json() : null;
    }).then(function (run) {
      if (run && (run.status === "queued" || run.status === "running")) w.attach(id);
      else try { localStorage.removeItem(w.key); } catch (e) { /* ignore */ }
    }).catch(function () { /* stay idle */ });
  };

  ST.prototype.start = function () {
    var w = this;
    this.startBtn.disabled = true;
    this.say(this.t("steps.waiting"));
    fetch("/api/runs", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ experiment: this.exp, params: {} })
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; });
    }).then(function (res) {
      if (!res.ok) {
        w.say(fmt(w.t("steps.err"), res.body.error ? res.body.error.message : "?"));
        w.startBtn.disabled = false;
        return;
      }
      try { localStorage.setItem(w.key, res.body.id); } catch (e) { /* ignore */ }
      w.attach(res.body.id);
    }).catch(function (err) {
      w.say(fmt(w.t("steps.err"), String(err)));
      w.startBtn.disabled = false;
    });
  };

  ST.prototype.attach = function (id) {
    var w = this;
    if (this.es) this.es.close();
    this.runID = id;
    this.root.dataset.run = id;
    this.root.dataset.final = "false";
    this.list.innerHTML = "";
    this.pending = "";
    this.startBtn.disabled = true;
    this.startBtn.hidden = true;
    this.cancelBtn.hidden = false;
    this.cancelBtn.disabled = false;
    this.cancelBtn.removeAttribute("aria-disabled");
    this.replay.hidden = false;
    this.replay.href = "/runs/" + encodeURIComponent(id);
    this.offer([]);
    var es = new EventSource("/api/runs/" + encodeURIComponent(id) + "/events");
    this.es = es;
    es.onmessage = function (m) {
      var ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      w.handle(ev);
    };
    es.addEventListener("end", function () { es.close(); });
    es.onerror = function () {
      if (es.readyState !== EventSource.CLOSED) w.say(w.t("run.connection"));
    };
  };

  ST.prototype.text = function (ev) {
    return (ev.messages && ev.messages[this.lang]) || ev.message || "";
  };

  ST.prototype.handle = function (ev) {
    switch (ev.type) {
      case "status":
        if (ev.status === "queued") this.say(fmt(this.t("steps.queued"), Math.max(0, (ev.position || 1) - 1)));
        else if (ev.status === "running") this.say(this.t("steps.running"));
        else this.finished(ev);
        break;
      case "command":
        this.pending = ev.name;
        break;
      case "step":
        this.card(ev);
        this.offer(ev.offers || []);
        break;
      case "log":
        if (ev.messages && (ev.level === "warn" || ev.level === "info")) this.note(this.text(ev), ev.level);
        break;
      case "error":
        this.note(this.text(ev), "error");
        break;
    }
  };

  ST.prototype.note = function (text, level) {
    if (!text) return;
    this.list.appendChild(h("li", { "class": "st-note st-note-" + level, "data-testid": "st-note" }, text));
  };

  // card renders one step event like the server's stepCard (stepthrough.templ).
  ST.prototype.card = function (ev) {
    var ok = ev.ok !== false;
    var li = h("li", { "class": "st-step" + (ok ? "" : " st-failed"), "data-step": ev.name, "data-testid": "st-step" });
    if (this.pending && this.pending !== "next") {
      var p = h("p", { "class": "st-cmd" }, this.t("steps.you")); // its separator in its language
      p.appendChild(h("code", null, this.pending));
      li.appendChild(p);
    }
    this.pending = "";
    var title = h("h4", { tabindex: "-1" }, this.text(ev) + " ");
    if (ev.errno_name) title.appendChild(h("code", { "class": "errno", "data-testid": "st-errno" }, ev.errno_name));
    li.appendChild(title);
    var body = h("div", { "class": "st-body" });
    if (ev.code) {
      var fig = h("figure", { "class": "st-code" });
      var cap = h("figcaption", null, this.t("steps.code") + " ");
      cap.appendChild(h("code", null, ev.call || ""));
      fig.appendChild(cap);
      var pre = h("pre");
      pre.appendChild(h("code", { "class": "language-c" }, ev.code));
      fig.appendChild(pre);
      body.appendChild(fig);
    }
    var rows = ev.table && ev.table.rows;
    var loc = ev.table && ev.table.i18n && ev.table.i18n[this.lang];
    if (loc && loc.rows && rows && loc.rows.length === rows.length) rows = loc.rows;
    if (rows && rows.length) {
      var tb = h("table", { "class": "exp-table st-result" });
      tb.appendChild(h("caption", null, this.t("steps.result")));
      var tbody = h("tbody");
      rows.forEach(function (r) {
        var tr = h("tr");
        r.forEach(function (c, i) { tr.appendChild(h(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : null, c)); });
        tbody.appendChild(tr);
      });
      tb.appendChild(tbody);
      body.appendChild(tb);
    }
    li.appendChild(body);
    var detail = ev.detail && (ev.detail[this.lang] || ev.detail.en);
    if (detail) li.appendChild(h("p", { "class": "st-detail" }, detail));
    this.list.appendChild(li);
    this.say(this.text(ev) + (ev.errno_name ? " — " + ev.errno_name : "") + ". " + (ev.offers && ev.offers.length ? this.t("steps.ready") : ""));
    if (li.scrollIntoView) li.scrollIntoView({ block: "nearest" });
  };

  // offer shows the buttons of the commands the run accepts now and puts
  // the focus on the one to press most likely next.
  ST.prototype.offer = function (names) {
    var first = null;
    this.cmdBtns.forEach(function (b) {
      var on = names.indexOf(b.dataset.cmd) >= 0;
      b.hidden = !on;
      b.disabled = false;
      if (on && !first) first = b;
    });
    var pref = this.root.querySelector('[data-cmd="next"]:not([hidden])') || this.root.querySelector('[data-cmd="reconnect"]:not([hidden])') || first;
    if (pref && this.root.contains(document.activeElement)) pref.focus();
    else if (pref && document.activeElement === document.body) pref.focus();
  };

  ST.prototype.send = function (cmd) {
    var w = this;
    if (!this.runID) return;
    var active = document.activeElement;
    this.cmdBtns.forEach(function (b) { b.disabled = true; });
    this.say(this.t("steps.waiting"));
    fetch("/api/runs/" + encodeURIComponent(this.runID) + "/commands", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ cmd: cmd })
    }).then(function (r) {
      if (r.ok) return;
      return r.json().then(function (body) {
        w.say(fmt(w.t("steps.err"), body.error ? body.error.message : r.status));
        w.cmdBtns.forEach(function (b) { b.disabled = false; });
        if (active && active.focus) active.focus();
      });
    }).catch(function (err) {
      w.say(fmt(w.t("steps.err"), String(err)));
      w.cmdBtns.forEach(function (b) { b.disabled = false; });
    });
  };

  // cancel asks once; the button keeps the focus (aria-disabled, not
  // disabled) until finished() hands it to Start
  ST.prototype.cancel = function () {
    if (!this.runID || this.cancelBtn.getAttribute("aria-disabled") === "true") return;
    this.cancelBtn.setAttribute("aria-disabled", "true");
    fetch("/api/runs/" + encodeURIComponent(this.runID) + "/cancel", { method: "POST", credentials: "same-origin" });
  };

  ST.prototype.finished = function (ev) {
    if (this.es) { this.es.close(); this.es = null; }
    this.root.dataset.final = "true";
    this.root.dataset.status = ev.status;
    this.offer([]);
    this.cancelBtn.hidden = true;
    this.startBtn.hidden = false;
    this.startBtn.disabled = false;
    var key = "steps." + ev.status;
    if (ev.status === "done") this.say(this.t("steps.ended"));
    else if (ev.status === "failed") this.say(fmt(this.t("steps.failed"), ev.message || ""));
    else this.say(this.t(key));
    try { if (localStorage.getItem(this.key) === this.runID) localStorage.removeItem(this.key); } catch (e) { /* ignore */ }
    this.startBtn.focus();
  };

  function init() {
    document.querySelectorAll(".stepthrough[data-experiment]").forEach(function (root) {
      if (root.querySelector('[data-action="start"]') && !root.rdmalabSteps) root.rdmalabSteps = new ST(root);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
