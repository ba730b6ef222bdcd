// calculator.js makes the CPU budget calculator live: the result follows
// every keystroke, the preset links fill the form in place, and the URL
// keeps the values (so a reload, which the server answers, shows the same
// thing). Without it the form is a GET form and the server computes the
// result. The sentence templates come from the page, and fmtNum follows
// web/lesson_visuals.go's fmtNum, so both paths print the same text.
(function () {
  "use strict";

  var MAX_SQUARES = 200;
  var NAMES = ["cb_gbps", "cb_ghz", "cb_core"];

  function fill(tpl, kv) {
    return String(tpl || "").replace(/\{(\w+)\}/g, function (m, k) {
      return k in kv ? String(kv[k]) : m;
    });
  }

  // Three significant digits, no exponent, no trailing zeros.
  function fmtNum(x) {
    if (!isFinite(x) || x === 0) return "0";
    var dec = 2 - Math.floor(Math.log10(Math.abs(x)));
    dec = Math.min(Math.max(dec, 0), 4);
    var s = x.toFixed(dec);
    if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }

  function setup(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    var form = root.querySelector("form.calc-form");
    var out = root.querySelector("output.calc-result");
    var source = root.querySelector(".calc-source");
    if (!form || !out) return;
    var inputs = NAMES.map(function (n) { return form.elements[n]; });
    if (inputs.some(function (i) { return !i; })) return;
    var machinesOf = Math.max(1, parseInt(root.dataset.cores, 10) || 1);

    function values() {
      return inputs.map(function (i) {
        var x = i.value.trim() === "" ? NaN : Number(i.value);
        var ok = isFinite(x) && i.validity.valid;
        i.setAttribute("aria-invalid", ok ? "false" : "true");
        i.closest(".calc-field").classList.toggle("invalid", !ok);
        var err = document.getElementById(i.id + "-err");
        // Name the allowed range at the field, not only "fix the marked input".
        if (err) err.textContent = ok ? "" : (root.dataset.msgRange || "").replace("%s", i.min || "0").replace("%s", i.max || "∞");
        return ok ? x : NaN;
      });
    }

    function compute() {
      var v = values();
      out.textContent = "";
      if (v.some(isNaN)) {
        var bad = document.createElement("span");
        bad.className = "calc-invalid";
        bad.textContent = root.dataset.msgInvalid || "";
        out.appendChild(bad);
        return;
      }
      var total = v[0] * v[1];
      var cores = total / v[2];
      var sentence = document.createElement("strong");
      sentence.className = "calc-sentence";
      sentence.textContent = fill(root.dataset.tplResult, {
        gbps: fmtNum(v[0]), ghz: fmtNum(v[1]), total: fmtNum(total), cores: fmtNum(cores), core: fmtNum(v[2]),
      });
      var machines = document.createElement("span");
      machines.className = "calc-machines";
      machines.textContent = fill(root.dataset.tplMachines, { machines: fmtNum(cores / machinesOf), n: machinesOf });
      out.appendChild(sentence);
      out.appendChild(machines);
      out.appendChild(bar(cores));
    }

    function bar(cores) {
      var b = document.createElement("span");
      b.className = "cores-bar";
      b.setAttribute("role", "img");
      b.setAttribute("aria-label", fill(root.dataset.tplBar, { cores: fmtNum(cores) }));
      b.dataset.testid = "cores-bar";
      var whole = Math.floor(cores);
      var part = cores - whole >= 0.05;
      var more = 0;
      if (whole > MAX_SQUARES) { more = whole - MAX_SQUARES; whole = MAX_SQUARES; part = false; }
      for (var k = 0; k < whole; k++) b.appendChild(square(""));
      if (part) b.appendChild(square(" part"));
      if (more > 0) {
        var m = document.createElement("span");
        m.className = "more";
        m.textContent = "+" + more;
        b.appendChild(m);
      }
      return b;
    }

    function square(extra) {
      var s = document.createElement("span");
      s.className = "core" + extra;
      return s;
    }

    // The URL keeps what the learner sees (the other widget's answers too).
    function remember() {
      var u = new URL(location.href);
      inputs.forEach(function (i) { u.searchParams.set(i.name, i.value.trim()); });
      u.hash = "cpu-budget";
      history.replaceState(history.state, "", u.toString());
    }

    function says(key) {
      if (source && root.dataset[key]) source.textContent = root.dataset[key];
    }

    form.addEventListener("input", function () {
      compute();
      says("srcQuery");
      root.dataset.source = "query";
    });
    form.addEventListener("change", remember);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      compute();
      remember();
    });
    function usePreset(a) {
      inputs[1].value = a.dataset.ghz;
      inputs[2].value = a.dataset.core;
      compute();
      remember();
      says(a.dataset.preset === "measured" ? "srcMeasured" : "srcRule");
      root.dataset.source = a.dataset.preset;
    }
    function bindPreset(a) {
      a.addEventListener("click", function (e) {
        e.preventDefault();
        usePreset(a);
      });
    }
    root.querySelectorAll("a[data-preset]").forEach(bindPreset);

    // A tcp-cost run that just finished on this page offers its figures at
    // once, as the server does on the next visit: the measured preset, and
    // the values themselves unless the learner typed their own.
    document.addEventListener("rdmalab:run-done", function (e) {
      var d = e.detail || {};
      var f = d.figures || {};
      if (d.experiment !== "tcp-cost" || !(f.ghz_per_gbps > 0) || !(f.cpu_ghz > 0)) return;
      var presets = root.querySelector(".calc-presets");
      if (!presets) return;
      var hint = presets.querySelector(".hint");
      if (hint) hint.remove();
      presets.querySelectorAll(".calc-measured").forEach(function (x) { x.remove(); });
      var a = document.createElement("a");
      a.dataset.preset = "measured";
      a.dataset.testid = "cpu-budget-measured";
      a.dataset.ghz = fmtNum(f.ghz_per_gbps);
      a.dataset.core = fmtNum(f.cpu_ghz);
      var args = [a.dataset.ghz, a.dataset.core, humanBytes(f.msg_size)], k = 0;
      a.textContent = String(root.dataset.tplMeasured || "").replace(/%s/g, function () { return args[k++]; });
      var u = new URL(location.href);
      u.searchParams.set("cb_gbps", inputs[0].value.trim() || "100");
      u.searchParams.set("cb_ghz", a.dataset.ghz);
      u.searchParams.set("cb_core", a.dataset.core);
      u.hash = "cpu-budget";
      a.href = u.pathname + u.search + u.hash;
      var run = document.createElement("a");
      run.href = "/runs/" + encodeURIComponent(d.run);
      run.textContent = root.dataset.msgSeerun || "";
      var dot = document.createElement("span");
      dot.setAttribute("aria-hidden", "true");
      dot.textContent = "·";
      var part = document.createElement("span");
      part.className = "calc-measured";
      part.append(dot, " ", a, " (", run, ")");
      presets.appendChild(part);
      bindPreset(a);
      if (root.dataset.source !== "query") usePreset(a);
    });
  }

  // The message size as the experiment names it (web/lesson_visuals.go's humanBytes).
  function humanBytes(n) {
    if (!(n > 0)) return "";
    if (n >= 1048576 && n % 1048576 === 0) return n / 1048576 + " MiB";
    if (n >= 1024 && n % 1024 === 0) return n / 1024 + " KiB";
    return Math.floor(n) + " B";
  }

  function init() {
    document.querySelectorAll("section.rd-widget.calc").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
