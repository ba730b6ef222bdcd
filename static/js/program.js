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
    var state = null, timer = null, dirty = false;

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
    }

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

    resetBtn.addEventListener('click', function () {
      if (!state || !window.confirm(S['reset.confirm'])) return;
      ed.set(state.starter);
      dirty = true;
      saveNow();
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
