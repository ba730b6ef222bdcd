// A lesson's :::program exercises (web/program.go): the learner's code is
// loaded from and saved to the server (debounced as they type), Run
// compiles and runs it in their own machine and follows the run's events
// (the same stream and replay as experiment runs): phases, output, the
// compiler's diagnostics at their lines, and the check's verdict.
(function () {
  'use strict';

  var SAVE_AFTER = 800; // ms without a keystroke

  // TAB_KEY remembers the learner's "Tab indents" choice (off by default:
  // Tab leaves the editor, as it leaves every other field).
  var TAB_KEY = 'lab-tab-indents';
  function tabIndents() {
    try { return localStorage.getItem(TAB_KEY) === '1'; } catch (e) { return false; }
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function fmt(s) {
    var args = Array.prototype.slice.call(arguments, 1);
    return s.replace(/%[ds]/g, function () { return args.length ? String(args.shift()) : ''; });
  }

  async function api(method, url, body) {
    var opt = { method: method, headers: { 'Accept': 'application/json' }, credentials: 'same-origin' };
    if (body !== undefined) {
      opt.headers['Content-Type'] = 'application/json';
      opt.body = JSON.stringify(body);
    }
    var res = await fetch(url, opt);
    var data = await res.json().catch(function () { return {}; });
    if (!res.ok) throw new Error((data.error && data.error.message) || res.statusText);
    return data;
  }

  // selectLine puts the caret on line n of the textarea and scrolls to it.
  function selectLine(ta, n) {
    var lines = ta.value.split('\n');
    var start = 0;
    for (var i = 0; i < n - 1 && i < lines.length; i++) start += lines[i].length + 1;
    var end = start + (lines[n - 1] || '').length;
    ta.focus();
    ta.setSelectionRange(start, end);
    var lh = parseFloat(getComputedStyle(ta).lineHeight) || 18;
    ta.scrollTop = Math.max(0, (n - 3) * lh);
  }

  // hintNodes renders a hint's plain text with `code` spans as <code>.
  function hintNodes(li, text) {
    text.split('`').forEach(function (part, i) {
      li.appendChild(i % 2 ? el('code', null, part) : document.createTextNode(part));
    });
  }

  // lineDiff compares two texts line by line (longest common subsequence):
  // a list of {t: ' ' | '+' | '-', s: line}. Texts beyond MAX lines each
  // are compared as wholes, to bound the work.
  var MAX = 1500;
  function lineDiff(a, b) {
    var x = a.split('\n'), y = b.split('\n');
    if (x.length > MAX || y.length > MAX) {
      return x.map(function (s) { return { t: '-', s: s }; }).concat(y.map(function (s) { return { t: '+', s: s }; }));
    }
    var n = x.length, m = y.length, w = m + 1;
    var L = new Uint16Array((n + 1) * w);
    for (var i = n - 1; i >= 0; i--) {
      for (var j = m - 1; j >= 0; j--) {
        L[i * w + j] = x[i] === y[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
      }
    }
    var out = [];
    i = 0; j = 0;
    while (i < n && j < m) {
      if (x[i] === y[j]) { out.push({ t: ' ', s: x[i] }); i++; j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) out.push({ t: '-', s: x[i++] });
      else out.push({ t: '+', s: y[j++] });
    }
    while (i < n) out.push({ t: '-', s: x[i++] });
    while (j < m) out.push({ t: '+', s: y[j++] });
    return out;
  }

  function setup(root) {
    var base = root.getAttribute('data-endpoint');
    var lang = root.getAttribute('data-lang') || 'en';
    var S = JSON.parse(root.getAttribute('data-strings') || '{}');
    var ta = root.querySelector('.program-source');
    var runBtn = root.querySelector('.program-run');
    var resetBtn = root.querySelector('.program-reset');
    var solBtn = root.querySelector('.program-show-solution');
    var save = root.querySelector('.program-save');
    var verdict = root.querySelector('.program-verdict');
    var diags = root.querySelector('.program-diags');
    var outBox = root.querySelector('.program-out');
    var out = root.querySelector('.program-output');
    var sol = root.querySelector('.program-sol');
    var record = root.querySelector('.program-record');
    var hintBtn = root.querySelector('.program-hint-next');
    var hintBox = root.querySelector('.program-hints');
    var diffBtn = root.querySelector('.program-diff-show');
    var diffBox = root.querySelector('.program-diff');
    var restoreBtn = root.querySelector('.program-restore');
    var state = null, timer = null, dirty = false, diffTimer = null;

    // The editor: CodeMirror (static/vendor/codemirror) when it loaded,
    // else the plain textarea; both behind get/set/diagnostics/goto.
    var ed = {
      get: function () { return ta.value; },
      set: function (v) { ta.value = v; },
      diagnostics: function () {},
      goto: function (n) { selectLine(ta, n); },
    };
    function onEdit() {
      dirty = true;
      clearTimeout(timer);
      timer = setTimeout(saveNow, SAVE_AFTER);
      if (!diffBox.hidden) {
        clearTimeout(diffTimer);
        diffTimer = setTimeout(showDiff, 300);
      }
    }
    if (window.LabEditor) {
      var html = document.documentElement;
      var isDark = function () {
        return (html.dataset.theme || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')) === 'dark';
      };
      var keys = root.querySelector('.program-keys');
      var tabBox = keys && keys.querySelector('input[type=checkbox]');
      var cm = window.LabEditor.create(ta.parentNode, {
        doc: '', label: ta.getAttribute('aria-label'), dark: isDark(), onChange: onEdit,
        describedBy: keys ? keys.id : '', tabIndents: tabIndents(),
      });
      ta.hidden = true;
      if (keys) {
        keys.hidden = false;
        tabBox.checked = tabIndents();
        tabBox.addEventListener('change', function () {
          try { localStorage.setItem(TAB_KEY, tabBox.checked ? '1' : '0'); } catch (e) {}
          document.dispatchEvent(new CustomEvent('lab-tab-indents'));
        });
        // One choice for every editor of the page (and the next visit).
        document.addEventListener('lab-tab-indents', function () {
          tabBox.checked = tabIndents();
          cm.setTabIndents(tabBox.checked);
        });
      }
      ed = {
        get: function () { return cm.value; },
        // Only a real change: replacing the text with itself would drop
        // the compiler's marks (they map through the change).
        set: function (v) { if (v !== cm.value) cm.value = v; },
        diagnostics: function (ds) { cm.setDiagnostics(ds); },
        goto: function (n) { cm.goto(n); },
        view: cm.view, // CodeMirror's EditorView, for tests
      };
      // The page's theme: the learner's toggle (data-theme) or the system's.
      new MutationObserver(function () { cm.setDark(isDark()); }).observe(html, { attributes: true, attributeFilter: ['data-theme'] });
      matchMedia('(prefers-color-scheme: dark)').addEventListener('change', function () { cm.setDark(isDark()); });
      root.classList.add('program-cm');
    } else {
      ta.addEventListener('input', onEdit);
    }
    var diagList = [];
    root._editor = ed; // for tests and the browser console

    function showState(st) {
      state = st;
      record.textContent = st.record || '';
      root.classList.toggle('program-passed', !!st.passed);
      var failed = st.attempts - st.passes;
      solBtn.hidden = !(st.solution_seen || failed >= st.solution_after);
      showHints(st);
      restoreBtn.hidden = !st.before_reset;
      // The class leaderboard's link: only for a learner whose class shows one.
      var board = root.querySelector('.program-board');
      if (board) board.hidden = !st.leaderboard;
    }

    // showHints lists the revealed hints and words the button for the
    // next one; with none left the button goes.
    function showHints(h) {
      var ol = hintBox.querySelector('ol');
      var have = ol.children.length;
      var hints = h.hints || [];
      for (var i = have; i < hints.length; i++) {
        var li = el('li');
        li.setAttribute('data-testid', 'program-hint-text');
        li.tabIndex = -1;
        hintNodes(li, hints[i]);
        ol.appendChild(li);
      }
      hintBox.hidden = hints.length === 0;
      var left = hints.length < (h.hints_total || 0);
      hintBtn.hidden = !left;
      if (left) hintBtn.textContent = fmt(S['hint.next'] || '%d/%d', hints.length + 1, h.hints_total);
    }

    // Not disabled while asking: a disabled button would drop the focus
    // of the keyboard user who pressed it. A second press waits instead.
    var hintBusy = false;
    hintBtn.addEventListener('click', async function () {
      if (hintBusy) return;
      hintBusy = true;
      try {
        var h = await api('POST', base + '/hint');
        var before = hintBox.querySelectorAll('li').length;
        state.hints = h.hints;
        state.hints_total = h.hints_total;
        showHints(h);
        // The new hint takes the focus when the button went away (it was
        // the last one): the keyboard never falls back to the page's top.
        var lis = hintBox.querySelectorAll('li');
        if (hintBtn.hidden && lis.length > before) lis[lis.length - 1].focus();
      } catch (e) {
        save.textContent = e.message;
      } finally {
        hintBusy = false;
      }
    });

    // The comparison with the starter: only the changed lines and two
    // lines around each, kept up to date while it is open.
    function showDiff() {
      if (!state) return;
      var ops = lineDiff(state.starter, ed.get());
      var pre = diffBox.querySelector('pre');
      pre.textContent = '';
      var added = 0, removed = 0, near = [];
      ops.forEach(function (o, i) {
        if (o.t === '+') added++;
        if (o.t === '-') removed++;
        if (o.t !== ' ') for (var k = Math.max(0, i - 2); k <= Math.min(ops.length - 1, i + 2); k++) near[k] = true;
      });
      var gap = false;
      ops.forEach(function (o, i) {
        if (!near[i]) {
          if (!gap && pre.childNodes.length) pre.appendChild(el('span', 'gap', '…\n'));
          gap = true;
          return;
        }
        gap = false;
        pre.appendChild(el('span', o.t === '+' ? 'add' : o.t === '-' ? 'del' : 'ctx', (o.t === '-' ? '− ' : o.t + ' ') + o.s + '\n'));
      });
      var h = diffBox.querySelector('.program-diff-h');
      h.textContent = added + removed ? fmt(S['diff.h'] || '%d %d', added, removed) : (S['diff.same'] || '');
      pre.hidden = !(added + removed);
    }

    diffBtn.addEventListener('click', function () {
      var open = diffBox.hidden;
      diffBox.hidden = !open;
      diffBtn.setAttribute('aria-expanded', String(open));
      diffBtn.textContent = open ? (S['diff.hide'] || '') : (S['diff'] || '');
      if (open) showDiff();
    });

    async function load() {
      var st = await api('GET', base);
      if (!dirty) ed.set(st.source);
      dirty = false;
      showState(st);
    }

    async function saveNow() {
      if (!dirty) return;
      dirty = false;
      save.textContent = S['saving'] || '';
      try {
        await api('PUT', base + '/code', { source: ed.get() });
        save.textContent = S['saved'] || '';
      } catch (e) {
        dirty = true;
        save.textContent = fmt(S['savefail'] || '%s', e.message);
      }
    }

    window.addEventListener('pagehide', function () {
      if (dirty && navigator.sendBeacon) {
        // The last keystrokes: a PUT cannot be beaconed, the next load shows what was saved.
        saveNow();
      }
    });

    // Reset: the server keeps the code it replaces (Restore brings it
    // back), and in the editor the reset is one change Ctrl-Z undoes.
    resetBtn.addEventListener('click', async function () {
      if (!state || !window.confirm(S['reset.confirm'])) return;
      clearTimeout(timer);
      try {
        await saveNow(); // the server keeps the very last keystrokes
        var r = await api('POST', base + '/reset');
        ed.set(r.source);
        dirty = false;
        state.before_reset = r.before_reset;
        restoreBtn.hidden = !r.before_reset;
        save.textContent = S['saved'] || '';
        if (!diffBox.hidden) showDiff();
      } catch (e) {
        save.textContent = e.message;
      }
    });

    restoreBtn.addEventListener('click', function () {
      if (!state || !state.before_reset || !window.confirm(S['restore.ask'])) return;
      ed.set(state.before_reset);
      dirty = true;
      saveNow();
      restoreBtn.hidden = true;
      resetBtn.focus();
      if (!diffBox.hidden) showDiff();
    });

    solBtn.addEventListener('click', async function () {
      if (!window.confirm(S['solution.ask'])) return;
      try {
        var r = await api('POST', base + '/solution');
        sol.querySelector('summary').textContent = S['solution.h'] || '';
        sol.querySelector('pre').textContent = r.solution;
        sol.hidden = false;
        sol.open = true;
      } catch (e) {
        save.textContent = e.message;
      }
    });

    function append(cls, text) {
      var span = el('span', cls, text);
      out.appendChild(span);
      out.scrollTop = out.scrollHeight;
    }

    function addDiag(ev) {
      var line = ev.figures && ev.figures.line;
      if (!line) return;
      diags.hidden = false;
      var li = el('li', ev.name || 'error');
      var b = el('button', null, fmt(S['line'] || 'line %d', line));
      b.type = 'button';
      b.setAttribute('data-line', String(line));
      b.addEventListener('click', function () { ed.goto(line); });
      li.appendChild(b);
      li.appendChild(document.createTextNode(' ' + (ev.name ? ev.name + ': ' : '') + (ev.message || '')));
      li.setAttribute('data-testid', 'program-diag');
      li.setAttribute('data-line', String(line));
      diags.querySelector('ul').appendChild(li);
      diagList.push({ line: line, message: ev.message || '', severity: ev.name });
      ed.diagnostics(diagList);
    }

    function showVerdict(ev) {
      verdict.textContent = '';
      verdict.className = 'program-verdict ' + (ev.ok ? 'ok' : 'fail');
      var msg = (ev.messages && ev.messages[lang]) || ev.message || '';
      verdict.appendChild(el('p', null, msg));
      var hint = ev.detail && ev.detail[lang];
      if (hint) {
        var pre = el('pre', 'program-hint', hint);
        pre.setAttribute('data-testid', 'program-hint');
        verdict.appendChild(pre);
      }
      var f = ev.figures || {};
      if (f.compile_ms || f.run_ms) verdict.appendChild(el('p', 'program-times', fmt(S['times'] || '', f.compile_ms || 0, f.run_ms || 0)));
    }

    runBtn.addEventListener('click', async function () {
      clearTimeout(timer);
      runBtn.disabled = true;
      root.setAttribute('aria-busy', 'true');
      verdict.className = 'program-verdict';
      verdict.textContent = '';
      verdict.appendChild(el('p', null, S['running'] || ''));
      diags.hidden = true;
      diags.querySelector('ul').textContent = '';
      diagList = [];
      ed.diagnostics([]);
      out.textContent = '';
      outBox.hidden = false;
      outBox.open = true;
      var done = function () {
        runBtn.disabled = false;
        root.removeAttribute('aria-busy');
        load().catch(function () {});
      };
      var r;
      try {
        dirty = false;
        r = await api('POST', base + '/run', { source: ed.get() });
      } catch (e) {
        verdict.className = 'program-verdict fail';
        verdict.textContent = '';
        verdict.appendChild(el('p', null, e.message));
        done();
        return;
      }
      var es = new EventSource(r.events);
      es.onmessage = function (m) {
        var ev;
        try { ev = JSON.parse(m.data); } catch (e) { return; }
        switch (ev.type) {
          case 'phase':
            // The verdict is the exercise's polite live region: each phase
            // replaces "running…" there, so a screen reader hears progress.
            if (runBtn.disabled && verdict.firstChild) verdict.firstChild.textContent = ((ev.messages && ev.messages[lang]) || ev.message || ev.name) + (lang === 'zh' ? '……' : '…');
            append('phase', '— ' + ((ev.messages && ev.messages[lang]) || ev.message || ev.name) + ' —\n');
            break;
          case 'log':
            if (ev.name === 'peer') append('peer', (S['peer'] || '') + '\n' + ((ev.messages && ev.messages[lang]) || ev.message) + '\n');
            else append(ev.level === 'stderr' ? 'stderr' : 'stdout', ev.message);
            break;
          case 'error':
            if (ev.call === 'tcc') addDiag(ev);
            else append('stderr', ((ev.messages && ev.messages[lang]) || ev.message) + '\n');
            break;
          case 'result':
            showVerdict(ev);
            break;
        }
      };
      es.addEventListener('end', function () { es.close(); done(); });
      es.onerror = function () {
        if (es.readyState === EventSource.CLOSED) done();
      };
    });

    load().catch(function (e) { save.textContent = e.message; });
  }

  function init() {
    document.querySelectorAll('.program[data-endpoint]').forEach(setup);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
