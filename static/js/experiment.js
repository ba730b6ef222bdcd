// rdmalab experiment widget: submits a run, follows its Server-Sent Events
// and draws them — status and queue position, the backend, phases, live
// uPlot charts (one per unit), tables, the verdict, errors with errno, log
// lines. The run page uses the same code to replay a stored run.
// Without JavaScript the widget's form posts to /runs instead.
(function () {
  "use strict";
  if (window.rdmalabExperiments) return; // loaded once per page
  window.rdmalabExperiments = true;

  var MAX_LOG = 500;
  var CHART_H = 260; // px: room for the longest y-axis title (web/chart_browser_test.go)
  var COLORS = ["#2f6fde", "#d9480f", "#2b8a3e", "#9c36b5", "#e67700", "#0b7285"];

  function h(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) if (attrs[k] != null) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }

  // chartSeq numbers the page's charts (ids for their data tables).
  var chartSeq = 0;

  // fmt replaces each %d / %s in order.
  function fmt(s) {
    var args = Array.prototype.slice.call(arguments, 1), i = 0;
    return String(s).replace(/%[ds]/g, function () { return String(args[i++]); });
  }

  // claimed maps a live run id to the widget following it, so two widgets
  // of one experiment on a page never both attach to it.
  var claimed = {};
  var livePromise = null;

  // liveRun asks the server once per page (again with force) for the
  // learner's queued or running run: {id, experiment, params, page, title}.
  function liveRun(force) {
    if (!livePromise || force) {
      livePromise = fetch("/api/runs/live", { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : {}; })
        .then(function (b) { return b.run || null; })
        .catch(function () { return null; });
    }
    return livePromise;
  }

  // announce tells the page's other widgets that a run started or ended.
  function announce(name, detail, from) {
    document.dispatchEvent(new CustomEvent(name, { detail: { run: detail, from: from } }));
  }

  var polling = false;
  // pollLive waits for a live run followed by no widget on this page (a
  // second tab's) to end, then frees every blocked widget.
  function pollLive() {
    if (polling) return;
    polling = true;
    var tick = function () {
      liveRun(true).then(function (run) {
        var ws = widgets();
        if (run && !claimed[run.id]) { ws.forEach(function (w) { w.block(run); }); setTimeout(tick, 3000); return; }
        polling = false;
        ws.forEach(function (w) { if (!run || w.blocker && w.blocker.id !== run.id) w.unblock(); });
      });
    };
    setTimeout(tick, 3000);
  }

  function widgets() {
    var out = [];
    document.querySelectorAll(".experiment[data-experiment]").forEach(function (r) { if (r.rdmalab) out.push(r.rdmalab); });
    return out;
  }

  document.addEventListener("rdmalab:live", function (e) {
    widgets().forEach(function (w) { if (w !== e.detail.from) w.block(e.detail.run); });
  });
  document.addEventListener("rdmalab:ended", function (e) {
    widgets().forEach(function (w) { if (w.blocker && w.blocker.id === e.detail.run.id) w.unblock(); });
  });

  function Widget(root) {
    this.root = root;
    this.lang = root.dataset.lang || "zh";
    try { this.s = JSON.parse(root.dataset.strings || "{}"); } catch (e) { this.s = {}; }
    this.exp = root.dataset.experiment;
    this.form = root.querySelector(".exp-form");
    this.out = root.querySelector(".exp-out");
    this.runBtn = root.querySelector('[data-action="run"]');
    this.cancelBtn = root.querySelector('[data-action="cancel"]');
    this.replay = root.querySelector(".exp-replay");
    this.es = null;
    this.runID = null;
    this.labReady = true; // no lab line: a host experiment is always runnable
    this.live = false;    // this widget follows a queued or running run
    this.blocker = null;  // another live run of this learner (elsewhere)
    this.notice = root.querySelector("[data-testid=run-notice]");
    this.cue = root.querySelector("[data-testid=run-cue]");
    this.lab = root.querySelector("[data-lab-status]");
    if (this.lab) this.labReady = false;
    this.bind();
    this.sync(); // Run waits for the lab from the start, not after a flash of enabled
    if (this.lab) this.watchLab();
  }

  // sync shows whether Run may be pressed. While the lab is not ready Run
  // is disabled; while the learner has a live run (here, in another widget
  // or another tab) it is aria-disabled: it keeps the keyboard focus, looks
  // dimmed, and a press (or Enter in a field) does nothing.
  Widget.prototype.sync = function () {
    if (!this.form) return;
    var busy = this.live || !!this.blocker;
    // Presets only fill the form (with JS): they stay usable; Run (and the
    // hidden Enter target) follow the lab and the live run.
    this.form.querySelectorAll('button[type="submit"]:not([data-preset])').forEach(function (b) {
      b.disabled = !this.labReady;
      if (busy) b.setAttribute("aria-disabled", "true"); else b.removeAttribute("aria-disabled");
    }, this);
  };

  Widget.prototype.runnable = function () {
    return this.labReady && !this.live && !this.blocker;
  };

  // say puts a short message above Run (a refusal, a cue) without touching
  // the run output below.
  Widget.prototype.say = function (msg, kind, link) {
    if (!this.notice) return;
    this.notice.textContent = msg || "";
    this.notice.dataset.kind = kind || "";
    this.notice.hidden = !msg;
    if (link) {
      this.notice.appendChild(document.createTextNode(" "));
      this.notice.appendChild(h("a", { href: link }, this.t("run.live.open")));
    }
  };

  // block disables Run because another run of this learner is live.
  Widget.prototype.block = function (run) {
    if (this.live) return;
    if (!claimed[run.id]) pollLive(); // nobody here follows it: ask until it ends
    this.blocker = run;
    this.say(fmt(this.t("run.live.other"), run.title || run.experiment), "blocked", run.page);
    this.sync();
  };

  Widget.prototype.unblock = function () {
    if (!this.blocker) return;
    this.blocker = null;
    if (this.notice && this.notice.dataset.kind === "blocked") this.say("");
    this.sync();
  };

  // watchLab shows the Soft-RoCE lab's state above an RDMA experiment and
  // keeps Run disabled until the lab is ready (GET /api/lab), polling while
  // the guest boots. Without JS the line links to /lab and the server queues
  // the run until the guest is up.
  Widget.prototype.watchLab = function () {
    var w = this;
    var setRunnable = function (ok) { w.labReady = ok; w.sync(); };
    // The state goes in a span before the link to /lab, which stays (a
    // keyboard user who tabbed to it does not lose it when the state comes).
    var text = w.lab.querySelector(".exp-lab-text");
    if (!text) {
      text = h("span", { "class": "exp-lab-text" });
      w.lab.insertBefore(text, w.lab.firstChild);
      var link = w.lab.querySelector("a");
      if (link) { link.textContent = w.t("run.lab.details"); w.lab.insertBefore(document.createTextNode(" "), link); }
    }
    var show = function (key, args, state) {
      text.textContent = fmt.apply(null, [w.t(key)].concat(args));
      w.lab.dataset.state = state;
    };
    var poll = function () {
      fetch("/api/lab", { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (lab) {
          if (lab.state === "ready") {
            var devs = (lab.devices || []).map(function (d) { return d.name + (d.netdev ? " → " + d.netdev : ""); }).join(w.lang === "zh" ? "、" : ", ");
            show("run.lab.ready", [devs || "-", lab.kernel || "?", (lab.accel || lab.backend || "").toUpperCase()], "ready");
            setRunnable(true);
            return;
          }
          setRunnable(false);
          if (lab.state === "booting") {
            show("run.lab.booting", [], "booting");
            setTimeout(poll, 2000);
          } else if (lab.state === "failed") {
            show("run.lab.failed", [lab.reason_text || lab.reason || "?"], "failed");
            setTimeout(poll, 10000); // the server restarts a failed guest
          } else {
            show("run.lab.none", [lab.reason_text || lab.reason || "?"], "none");
          }
        })
        .catch(function (e) {
          show("run.lab.unknown", [String(e)], "unknown");
          setTimeout(poll, 5000);
        });
    };
    poll();
  };

  Widget.prototype.t = function (k) { return this.s[k] || k; };
  Widget.prototype.text = function (ev) {
    return (ev.messages && ev.messages[this.lang]) || ev.message || "";
  };

  Widget.prototype.bind = function () {
    var w = this;
    if (this.form) {
      this.form.querySelectorAll("[data-preset]").forEach(function (b) {
        b.addEventListener("click", function (e) {
          e.preventDefault(); // with JS a preset fills the form; Run runs it
          w.fill(JSON.parse(b.dataset.preset));
          w.form.querySelectorAll("[data-preset]").forEach(function (x) {
            x.classList.toggle("active", x === b);
            x.setAttribute("aria-pressed", x === b ? "true" : "false");
          });
          // Cue: the preset only filled the form; Run runs it.
          if (w.cue) {
            w.cue.textContent = fmt(w.t("run.preset.cue"), b.textContent.trim());
            w.cue.hidden = false;
          }
          w.runBtn.classList.add("cued");
        });
      });
      this.form.addEventListener("submit", function (e) {
        e.preventDefault();
        if (!w.runnable()) return; // Enter in a field while a run is live: nothing
        w.submit();
      });
      if (this.cancelBtn) this.cancelBtn.addEventListener("click", function () { w.cancel(); });
    }
    if (this.root.dataset.run) { // the run page: replay, then follow live
      this.attach(this.root.dataset.run);
      return;
    }
    // The learner's live run (after a reload, in a second tab): follow it
    // here if it is this experiment's, else keep Run disabled until it ends.
    liveRun().then(function (run) { if (run) w.adopt(run); });
  };

  // adopt follows the learner's live run here or blocks Run for it.
  Widget.prototype.adopt = function (run) {
    if (this.live && this.runID === run.id) return;
    var owner = claimed[run.id];
    if (run.experiment === this.exp && (!owner || owner === this)) {
      claimed[run.id] = this;
      this.unblock();
      if (run.params) this.fill(run.params);
      this.attach(run.id);
      return;
    }
    this.block(run);
  };

  Widget.prototype.fill = function (values) {
    for (var name in values) {
      var f = this.form.elements[name];
      if (f) f.value = String(values[name]);
    }
  };

  Widget.prototype.params = function () {
    var p = {};
    this.form.querySelectorAll(".exp-params [name]").forEach(function (f) {
      var kind = f.dataset.kind;
      if (kind === "int" || kind === "bytes") p[f.name] = Number(f.value);
      else if (kind === "bool") p[f.name] = f.value === "true";
      else p[f.name] = f.value;
    });
    return p;
  };

  Widget.prototype.submit = function () {
    var w = this;
    if (!this.form.reportValidity()) return;
    this.live = true; // until the server answers: a second press does nothing
    this.sync();
    this.say("");
    if (this.cue) this.cue.hidden = true;
    this.runBtn.classList.remove("cued");
    fetch("/api/runs", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ experiment: this.exp, params: this.params() })
    }).then(function (r) {
      return r.json().then(function (body) { return { ok: r.ok, body: body }; });
    }).then(function (res) {
      if (!res.ok) {
        // A refusal is said above Run; what is on screen stays.
        var err = res.body.error || {};
        w.live = false;
        w.sync();
        w.say(err.message || "error", "refused");
        if (err.code === "conflict") { // a run of ours is live elsewhere: follow or wait for it
          liveRun(true).then(function (run) {
            if (!run) return;
            widgets().forEach(function (x) { x.adopt(run); }); // its widget here follows it, the others wait
            w.say(err.message, "blocked", run.page);
          });
        }
        return;
      }
      claimed[res.body.id] = w;
      w.attach(res.body.id);
      announce("rdmalab:live", { id: res.body.id, experiment: w.exp, page: "/runs/" + encodeURIComponent(res.body.id), title: w.title() }, w);
    }).catch(function (err) {
      w.live = false;
      w.sync();
      w.say(String(err), "refused");
    });
  };

  // cancel asks once. The button stays enabled (aria-disabled): disabling
  // the focused button dropped the keyboard focus to <body> (issue 30),
  // and finished() then had no focus to hand on to Run.
  Widget.prototype.cancel = function () {
    if (!this.runID || this.cancelBtn.getAttribute("aria-disabled") === "true") return;
    this.cancelBtn.setAttribute("aria-disabled", "true");
    fetch("/api/runs/" + encodeURIComponent(this.runID) + "/cancel", { method: "POST", credentials: "same-origin" });
  };

  // reset empties the output area and the run's drawing state.
  Widget.prototype.reset = function () {
    if (this.es) { this.es.close(); this.es = null; }
    this.result = null;
    this.captureBox = null;
    for (var u in (this.charts || {})) if (this.charts[u].plot) this.charts[u].plot.destroy();
    this.out.innerHTML = "";
    this.out.hidden = false;
    this.charts = {};
    this.logCount = 0;
    // The status line is the run's polite live region: its state and, while
    // it runs, each new phase are announced (issue 44 item 10).
    this.status = h("p", { "class": "exp-status", "data-testid": "run-status", role: "status", "aria-live": "polite", "aria-atomic": "true" });
    this.conn = h("p", { "class": "exp-conn", hidden: "" }, this.t("run.connection"));
    this.backend = h("p", { "class": "exp-backend", "data-testid": "run-backend", hidden: "" });
    this.phases = h("ol", { "class": "exp-phases", "aria-label": this.t("run.phases") });
    this.chartBox = h("div", { "class": "exp-charts", role: "group", "aria-label": this.t("run.charts") });
    this.tables = h("div", { "class": "exp-tables" });
    this.errors = h("div", { "class": "exp-errors" });
    this.verdict = h("div", { "class": "exp-verdict", "data-testid": "run-verdict", hidden: "" });
    this.log = h("details", { "class": "exp-log", open: "" });
    this.log.appendChild(h("summary", null, this.t("run.log")));
    this.logList = h("ol");
    this.log.appendChild(this.logList);
    [this.status, this.conn, this.backend, this.phases, this.chartBox, this.tables, this.errors, this.verdict, this.log]
      .forEach(function (e) { this.out.appendChild(e); }, this);
  };

  Widget.prototype.title = function () {
    var h3 = this.root.querySelector(".exp-head h3");
    return h3 ? h3.textContent.trim() : this.exp;
  };

  Widget.prototype.attach = function (id) {
    var w = this;
    if (this.es && this.runID === id) return; // already following it
    this.reset();
    this.runID = id;
    this.out.dataset.run = id;
    if (this.form) {
      this.live = true;
      this.sync();
      this.cancelBtn.hidden = false;
      this.cancelBtn.disabled = false;
      this.cancelBtn.removeAttribute("aria-disabled");
      this.replay.hidden = false;
      this.replay.href = "/runs/" + encodeURIComponent(id);
    }
    var es = new EventSource("/api/runs/" + encodeURIComponent(id) + "/events");
    this.es = es;
    es.onmessage = function (m) {
      w.conn.hidden = true;
      var ev;
      try { ev = JSON.parse(m.data); } catch (e) { return; }
      w.handle(ev);
    };
    es.addEventListener("end", function () { es.close(); w.finished(); });
    es.onerror = function () {
      // EventSource reconnects by itself with Last-Event-ID.
      if (es.readyState !== EventSource.CLOSED) w.conn.hidden = false;
    };
  };

  Widget.prototype.finished = function () {
    this.es = null;
    this.root.dataset.final = "true";
    if (this.form) {
      var hadFocus = document.activeElement === this.cancelBtn;
      this.live = false;
      this.sync();
      this.cancelBtn.hidden = true;
      if (hadFocus) this.runBtn.focus(); // the focused Cancel disappears: keep the place
    }
    delete claimed[this.runID];
    announce("rdmalab:ended", { id: this.runID, experiment: this.exp }, this);
  };

  Widget.prototype.handle = function (ev) {
    this.out.dataset.lastSeq = ev.seq;
    switch (ev.type) {
      case "status": return this.onStatus(ev);
      case "phase": return this.onPhase(ev);
      case "log":
        // A run shared with classmates (sandbox/runner_share.go) says so
        // where the learner looks, not in the collapsed log.
        if (ev.name === "shared") return this.onShared(this.text(ev));
        return this.onLog(ev.level || "info", this.text(ev));
      case "metric": return this.onMetric(ev);
      case "table": return this.onTable(ev.table);
      case "result": return this.onResult(ev);
      case "error": return this.errorBox(this.text(ev), ev.call, ev.errno_name, ev.errno, ev.expected);
      case "capture": return this.onCapture(ev);
    }
  };

  Widget.prototype.onStatus = function (ev) {
    var st = ev.status;
    this.out.dataset.status = st;
    this.status.className = "exp-status status-" + st;
    this.status.textContent = "";
    this.status.appendChild(h("strong", null, this.t("run.status." + st)));
    if (st === "queued" && ev.position > 0) {
      // The server words the wait (runs ahead, running ones included, and
      // an estimate from recent runs); the bare position is the fallback.
      this.status.appendChild(h("span", { "class": "exp-position", "data-testid": "run-position" },
        (ev.messages && ev.messages[this.lang]) || fmt(this.t("run.position"), ev.position - 1, ev.position)));
    }
    if (ev.message && st !== "done" && st !== "queued" && st !== "running") {
      this.status.appendChild(h("span", { "class": "exp-final" }, this.text(ev)));
    }
    if (ev.backend) {
      this.backend.hidden = false;
      this.backend.dataset.backend = ev.backend;
      this.backend.textContent = "";
      // zh punctuation in zh ("运行位置: vm." read as English)
      var zh = this.lang === "zh";
      this.backend.appendChild(h("strong", null, this.t("run.backend") + (zh ? "：" : ": ") + (this.s["run.backend.name." + ev.backend] || ev.backend) + (zh ? "。" : ". ")));
      var note = this.s["run.backend." + ev.backend];
      if (note) this.backend.appendChild(document.createTextNode(note));
    }
    if (st === "done" && this.result) {
      // Lesson widgets that use a run's figures (the CPU budget
      // calculator, calculator.js) listen for this.
      this.root.dispatchEvent(new CustomEvent("rdmalab:run-done", { bubbles: true,
        detail: { experiment: this.exp, run: this.runID, figures: this.result.figures || {} } }));
    }
    if (st !== "queued" && st !== "running") {
      this.phases.querySelectorAll(".current").forEach(function (li) { li.classList.remove("current"); });
      this.log.open = false;
    }
  };

  // onCapture gives capture.js (the packet list) a box above the tables;
  // the event itself carries only the .pcap, capture.js fetches it decoded.
  Widget.prototype.onCapture = function (ev) {
    if (!this.captureBox) {
      this.captureBox = h("div", { "class": "exp-capture", "data-testid": "run-capture" }, this.text(ev));
      this.out.insertBefore(this.captureBox, this.tables);
    }
    this.root.dispatchEvent(new CustomEvent("rdmalab:capture", { bubbles: true,
      detail: { run: this.runID, box: this.captureBox, lang: this.lang } }));
  };

  Widget.prototype.onPhase = function (ev) {
    // The current phase again is its progress ("… 50 of 200 round trips"):
    // its line is updated, not repeated (web/run_page.go does the same).
    var last = this.phases.lastElementChild;
    if (last && last.classList.contains("current") && last.dataset.phase === ev.name) {
      last.textContent = this.text(ev) || ev.name;
      return;
    }
    this.phases.querySelectorAll(".current").forEach(function (li) { li.classList.remove("current"); });
    this.phases.appendChild(h("li", { "class": "current", "data-phase": ev.name }, this.text(ev) || ev.name));
    // A new phase is said in the status line (its progress updates above are not: too chatty).
    if (this.out.dataset.status === "running") {
      var now = this.status.querySelector(".exp-now");
      if (!now) now = this.status.appendChild(h("span", { "class": "exp-now", "data-testid": "run-now" }));
      now.textContent = this.text(ev) || ev.name;
    }
  };

  Widget.prototype.onShared = function (text) {
    var p = h("p", { "class": "exp-shared", "data-testid": "run-shared", role: "status" }, text);
    this.out.insertBefore(p, this.status.nextSibling);
  };

  Widget.prototype.onLog = function (level, text) {
    if (this.logCount++ >= MAX_LOG) return;
    this.logList.appendChild(h("li", { "class": "log-" + level }, text));
    this.log.querySelector("summary").textContent = fmt(this.t("run.log.count"), this.logCount);
  };

  Widget.prototype.onTable = function (tb) {
    if (!tb) return;
    var loc = tb.i18n && tb.i18n[this.lang];
    if (loc) tb = { title: loc.title || tb.title, columns: loc.columns || tb.columns, rows: loc.rows || tb.rows };
    var wrap = h("div", { "class": "table-scroll", tabindex: "0", role: "region", "aria-label": tb.title || this.t("run.tables") });
    var t = h("table", { "class": "exp-table", "data-testid": "run-table" });
    if (tb.title) t.appendChild(h("caption", null, tb.title));
    var tr = h("tr");
    (tb.columns || []).forEach(function (c) { tr.appendChild(h("th", { scope: "col" }, c)); });
    t.appendChild(h("thead")).appendChild(tr);
    var body = h("tbody");
    (tb.rows || []).forEach(function (row) {
      var r = h("tr");
      row.forEach(function (c) { r.appendChild(h("td", null, c)); });
      body.appendChild(r);
    });
    t.appendChild(body);
    wrap.appendChild(t);
    this.tables.appendChild(wrap);
  };

  Widget.prototype.onResult = function (ev) {
    this.result = ev;
    var ok = ev.ok !== false;
    this.verdict.hidden = false;
    this.verdict.className = "exp-verdict " + (ok ? "ok" : "not-ok");
    this.verdict.textContent = "";
    this.verdict.appendChild(h("strong", null, this.t("run.verdict")));
    this.verdict.appendChild(h("p", null, this.text(ev)));
  };

  // errorBox draws an error; an expected one (provoked on purpose, e.g.
  // perf-inline's post above the threshold) is labelled as the intended
  // outcome, not shown as a failure of a successful run.
  Widget.prototype.errorBox = function (message, call, errnoName, errno, expected) {
    var box = h("div", { "class": "exp-error" + (expected ? " expected" : ""), role: expected ? "note" : "alert", "data-testid": "run-error" });
    var head = h("p");
    head.appendChild(h("strong", null, this.t(expected ? "run.error.expected" : "run.error")));
    if (call) head.appendChild(h("code", null, call));
    if (errnoName) head.appendChild(h("code", { "class": "errno" }, errnoName + (errno ? " (" + errno + ")" : "")));
    box.appendChild(head);
    box.appendChild(h("p", null, message));
    (this.errors || this.out).appendChild(box);
  };

  // Charts: one uPlot per unit, one line per series. Points are kept by x so
  // series with different sample times still line up.
  Widget.prototype.onMetric = function (ev) {
    var unit = ev.unit || "";
    var c = this.charts[unit];
    if (!c) {
      // Each chart is a named figure described by a table of its points
      // (collapsed; filled when opened): the canvas alone says nothing to
      // a screen reader (issue 44 item 10).
      var id = "exp-chart-" + (++chartSeq);
      c = this.charts[unit] = { unit: unit, series: [], labels: {}, points: {}, xs: {},
        box: h("div", { "class": "exp-chart", "data-unit": unit, role: "figure", "aria-describedby": id + "-data" }),
        // The y axis's title is a line of text above the chart, not
        // rotated text along the axis, which a phone's chart cut off
        // ("bandwidth (MB/s, measured her", issue 44 item 6).
        ytitle: h("p", { "class": "exp-chart-ytitle", "aria-hidden": "true" }) };
      this.chartBox.appendChild(c.ytitle);
      c.data = h("details", { "class": "exp-chart-data", "data-testid": "chart-data" });
      c.data.appendChild(h("summary", { id: id + "-data" }, this.t("run.chart.data")));
      var w = this;
      c.data.addEventListener("toggle", function () { if (c.data.open) w.fillData(c); });
      this.chartBox.appendChild(c.box);
      this.chartBox.appendChild(c.data);
    }
    if (!(ev.series in c.points)) {
      c.series.push(ev.series);
      c.points[ev.series] = {};
      c.labels[ev.series] = (ev.messages && ev.messages[this.lang]) || ev.series;
      if (c.plot) { c.plot.destroy(); c.plot = null; }
    }
    c.points[ev.series][ev.x] = ev.y;
    c.xs[ev.x] = true;
    this.schedule(c);
  };

  Widget.prototype.schedule = function (c) {
    if (c.pending) return;
    c.pending = true;
    var w = this;
    (window.requestAnimationFrame || setTimeout)(function () { c.pending = false; w.draw(c); });
  };

  Widget.prototype.draw = function (c) {
    if (typeof window.uPlot !== "function") return; // the library did not load: the tables still tell
    var xs = Object.keys(c.xs).map(Number).sort(function (a, b) { return a - b; });
    var data = [xs];
    c.series.forEach(function (s) {
      var p = c.points[s];
      data.push(xs.map(function (x) { return x in p ? p[x] : null; }));
    });
    if (!c.plot) {
      var width = Math.max(280, c.box.clientWidth || this.out.clientWidth || 600);
      var series = [{ label: "s" }];
      // A series name_lo / name_hi is the lowest / highest round around
      // the median line "name": drawn thin and dashed in its colour, the
      // space between them shaded (the spread the verdict weighs).
      var base = [], colorOf = {};
      c.series.forEach(function (s) {
        var m = /^(.+)_(lo|hi)$/.exec(s);
        if (!m || c.series.indexOf(m[1]) < 0) { colorOf[s] = COLORS[base.length % COLORS.length]; base.push(s); }
      });
      var bands = [];
      c.series.forEach(function (s) {
        var m = /^(.+)_(lo|hi)$/.exec(s);
        // The legend names the series only: the y axis says what is
        // plotted and in which unit, in the page's language (a raw unit
        // such as "% resent" in a Chinese legend was English leaking).
        if (m && colorOf[m[1]]) {
          series.push({ label: c.labels[s], stroke: colorOf[m[1]], width: 1, dash: [4, 4], spanGaps: true });
          if (m[2] === "hi" && c.series.indexOf(m[1] + "_lo") >= 0) bands.push({ hi: s, lo: m[1] + "_lo", color: colorOf[m[1]] });
        } else {
          series.push({ label: c.labels[s], stroke: colorOf[s], width: 2, spanGaps: true });
        }
      });
      // Axis text and grid follow the theme (uPlot draws black by default,
      // unreadable on the dark background); a theme change redraws.
      var ink = cssVar("--text", "#1d2124"), grid = cssVar("--border", "#dde1e4");
      var axis = function (a) { return Object.assign({ stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } }, a); };
      var opts = {
        width: width,
        height: CHART_H,
        scales: { x: { time: false, range: padRange }, y: { range: fromZero } },
        axes: [axis({ label: "s" }), axis({ label: c.unit, size: 64, labelSize: 22 })],
        series: series,
        bands: bands.map(function (b) {
          return { series: [c.series.indexOf(b.hi) + 1, c.series.indexOf(b.lo) + 1], fill: b.color + "22" };
        })
      };
      // chart-bands.js, when loaded, names the axes and adds reference bands.
      if (typeof window.rdmalabChart === "function") {
        opts = window.rdmalabChart(opts, { experiment: this.exp, unit: c.unit, series: c.series.slice(), lang: this.lang }) || opts;
      }
      c.xLabel = (opts.axes && opts.axes[0] && opts.axes[0].label) || "x";
      c.yLabel = (opts.axes && opts.axes[1] && opts.axes[1].label) || c.unit;
      c.ytitle.textContent = c.yLabel;
      if (opts.axes && opts.axes[1]) { opts.axes[1].label = null; opts.axes[1].labelSize = 0; }
      c.plot = new window.uPlot(opts, data, c.box);
      c.box._plot = c.plot;
      // A band's lowest and highest round are the shading around their
      // median's line: the legend names the median only (its dashed
      // edges had entries of their own, a lone ":" and "--" on a phone).
      var rows = c.plot.root.querySelectorAll(".u-legend .u-series");
      c.series.forEach(function (s, i) {
        var m = /^(.+)_(lo|hi)$/.exec(s);
        if (m && c.series.indexOf(m[1]) >= 0 && rows[i + 1]) rows[i + 1].classList.add("exp-band-edge");
      });
      narrowX(c.plot, xs);
    } else {
      c.plot.setData(data);
      narrowX(c.plot, xs);
    }
    // zh lists with 、 and sets the names off with ：, never ASCII ", " (issue 44 item 8).
    var zh = this.lang === "zh";
    var names = c.series.map(function (s) { return c.labels[s]; }).join(zh ? "、" : ", ");
    c.box.setAttribute("aria-label", fmt(this.t("run.chart.named"), c.yLabel + (names ? (zh ? "：" : " — ") + names : "")));
    if (c.data.open) this.fillData(c);
  };

  // fillData writes the chart's points as a table: x, then one column per
  // series (its label), the y axis as the caption.
  Widget.prototype.fillData = function (c) {
    var xs = Object.keys(c.xs).map(Number).sort(function (a, b) { return a - b; });
    var box = c.data.querySelector(".table-scroll") || c.data.appendChild(h("div", { "class": "table-scroll" }));
    var t = h("table", { "data-testid": "chart-table" });
    t.appendChild(h("caption", null, c.yLabel || c.unit));
    var head = t.appendChild(h("thead")).appendChild(h("tr"));
    head.appendChild(h("th", { scope: "col" }, c.xLabel || "x"));
    c.series.forEach(function (s) { head.appendChild(h("th", { scope: "col" }, c.labels[s])); });
    var body = t.appendChild(h("tbody"));
    xs.forEach(function (x) {
      var tr = body.appendChild(h("tr"));
      tr.appendChild(h("th", { scope: "row" }, num(x)));
      c.series.forEach(function (s) { tr.appendChild(h("td", null, x in c.points[s] ? num(c.points[s][x]) : "–")); });
    });
    box.textContent = "";
    box.appendChild(t);
  };

  // num shows a chart's value as the chart has it, without float noise.
  function num(v) { return typeof v === "number" ? String(+v.toPrecision(6)) : String(v); }

  // narrowX gives a lone x value a narrow axis around it: uPlot skips the
  // range function for one point and stretches it over 0–100 (a loss
  // sweep's first step drawn on a 0–100 % loss axis). Log axes keep theirs.
  function narrowX(u, xs) {
    if (xs.length !== 1 || u.scales.x.distr === 3) return;
    var r = padRange(u, xs[0], xs[0]);
    u.setScale("x", { min: r[0], max: r[1] });
  }

  // padRange keeps a chart of one x value readable mid-run: uPlot would
  // stretch a lone point over an arbitrary span (a 0–100 % loss axis).
  function padRange(u, min, max) {
    if (min == null || max == null) return [0, 1];
    if (min === max) { var d = Math.abs(min) || 1; return [Math.max(0, min - d), max + d]; }
    return [min, max];
  }

  // fromZero starts a linear y axis at 0 (every figure charted here is a
  // non-negative amount) and leaves a little room above the highest point;
  // a lone point no longer autoscales to twice its value.
  function fromZero(u, min, max) {
    if (min == null || max == null) return [0, 1];
    var lo = Math.min(0, min), hi = max > 0 ? max * 1.1 : 1;
    return window.uPlot.rangeNum ? window.uPlot.rangeNum(lo, hi, 0.05, true) : [lo, hi];
  }

  function cssVar(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  // A theme switch (the toggle sets html[data-theme], or the system
  // changes) rebuilds every chart with the new ink.
  function retheme() {
    widgets().forEach(function (w) {
      for (var u in (w.charts || {})) {
        var c = w.charts[u];
        if (c.plot) { c.plot.destroy(); c.plot = null; w.draw(c); }
      }
    });
  }
  if (window.MutationObserver) new MutationObserver(retheme).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    if (mq.addEventListener) mq.addEventListener("change", retheme);
  }

  window.addEventListener("resize", function () {
    document.querySelectorAll(".exp-chart").forEach(function (box) {
      if (box._plot) box._plot.setSize({ width: box.clientWidth, height: CHART_H });
    });
  });

  function init() {
    document.querySelectorAll(".experiment[data-experiment]").forEach(function (root) {
      if (root.querySelector(".exp-out")) root.rdmalab = new Widget(root);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
