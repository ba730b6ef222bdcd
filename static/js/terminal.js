// The learner's terminal (::terminal, web/terminal.go): xterm.js over a
// WebSocket to a shell in the learner's own Soft-RoCE guest. Opened on
// demand; after a reload it re-attaches (the server replays the scrollback).
(function () {
  'use strict';

  // xterm.js puts its generated CSS in <style> elements it appends to the
  // page, which the lab's CSP (style-src 'self', no inline styles) refuses
  // even when empty. Such an element is never inserted here: it gets a
  // constructed stylesheet adopted by the document instead (CSSOM, which
  // the CSP allows), which its textContent and its sheet (insertRule) feed.
  (function cspSafeStyles() {
    var text = Object.getOwnPropertyDescriptor(Node.prototype, 'textContent');
    var sheets = new WeakMap();
    function adopt(el) {
      var s = sheets.get(el);
      if (s) return s;
      s = { sheet: new CSSStyleSheet(), text: '' };
      sheets.set(el, s);
      document.adoptedStyleSheets = document.adoptedStyleSheets.concat([s.sheet]);
      Object.defineProperty(el, 'sheet', { configurable: true, get: function () { return s.sheet; } });
      el.remove = function () {
        document.adoptedStyleSheets = document.adoptedStyleSheets.filter(function (x) { return x !== s.sheet; });
      };
      return s;
    }
    var append = Node.prototype.appendChild;
    Node.prototype.appendChild = function (child) {
      if (child instanceof HTMLStyleElement && !child.isConnected) {
        adopt(child);
        return child;
      }
      return append.call(this, child);
    };
    Object.defineProperty(HTMLStyleElement.prototype, 'textContent', {
      configurable: true,
      get: function () {
        var s = sheets.get(this);
        return s ? s.text : text.get.call(this);
      },
      set: function (v) {
        var s = adopt(this);
        s.text = String(v);
        s.sheet.replaceSync(s.text);
      }
    });
  })();

  var KEY = 'rdmalab.terminal.open';

  function start(box) {
    var btn = box.querySelector('.term-open');
    var status = box.querySelector('.term-status');
    var screen = box.querySelector('.term-screen');
    if (!btn || !screen || typeof Terminal === 'undefined') return;
    var inuse = box.querySelector('.term-inuse');
    var term = null, fit = null, ws = null;
    // focusOnAttach: the learner pressed Open, so the shell takes the
    // keyboard once it is there; a reload's re-attach leaves focus alone
    // (it must not pull a keyboard or screen-reader user into the middle
    // of the page).
    var focusOnAttach = false;
    // Tab belongs to the shell (completion), so a keyboard user leaves the
    // terminal with Esc then Tab (or Shift+Tab): the Esc is held back until
    // the next key, and sent first unless that key is Tab.
    var pendingEsc = false;
    function keys(e) {
      if (e.type !== 'keydown') return true;
      if (e.key === 'Shift' || e.key === 'Control' || e.key === 'Alt' || e.key === 'Meta') return true;
      if (e.key === 'Tab' && pendingEsc && !e.ctrlKey && !e.altKey && !e.metaKey) {
        pendingEsc = false;
        return false; // not for xterm: the browser moves the focus
      }
      if (pendingEsc) {
        pendingEsc = false;
        send({ t: 'in', d: '\x1b' });
      }
      if (e.key === 'Escape' && !e.ctrlKey && !e.altKey && !e.metaKey && !e.shiftKey) {
        pendingEsc = true;
        return false;
      }
      return true;
    }

    function send(m) {
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
    }

    function open() {
      if (ws) return;
      btn.hidden = true;
      screen.hidden = false;
      status.textContent = '';
      if (!term) {
        // xterm.js names its input "Terminal input", in English whatever
        // the page's language: the page gives the name.
        if (box.dataset.inputLabel && Terminal.strings) Terminal.strings.promptLabel = box.dataset.inputLabel;
        if (box.dataset.tooMuch && Terminal.strings) Terminal.strings.tooMuchOutput = box.dataset.tooMuch;
        // lineHeight above 1: at 1.0 the glyphs' underscores fall outside
        // the cell with common monospace fonts, and hw_counters, sent_pkts
        // and ib_write_bw read as "hw counters", "sent pkts", "ib write bw".
        // screenReaderMode: xterm.js keeps its rows as text in an
        // accessibility tree and announces new output (politely), so a
        // screen reader reads the shell, not a canvas (issue 44 item 10).
        term = new Terminal({ cursorBlink: true, scrollback: 5000, fontSize: 14, lineHeight: 1.2, screenReaderMode: true });
        fit = new FitAddon.FitAddon();
        term.loadAddon(fit);
        term.open(screen);
        box._term = term; // for tests: the buffer's text (web/terminal_browser_test.go)
        fit.fit();
        term.attachCustomKeyEventHandler(keys);
        term.textarea.addEventListener('blur', function () { pendingEsc = false; });
        term.onData(function (d) { send({ t: 'in', d: d }); });
        term.onResize(function (s) { send({ t: 'size', rows: s.rows, cols: s.cols }); });
        window.addEventListener('resize', function () { fit.fit(); });
      } else {
        term.reset();
      }
      var scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      var ep = box.dataset.endpoint;
      ws = new WebSocket(scheme + '//' + location.host + ep + (ep.indexOf('?') < 0 ? '?' : '&') +
        'rows=' + term.rows + '&cols=' + term.cols);
      ws.binaryType = 'arraybuffer';
      ws.onopen = function () { localStorage.setItem(KEY, '1'); };
      ws.onmessage = function (e) {
        if (typeof e.data !== 'string') {
          term.write(new Uint8Array(e.data));
          return;
        }
        var m;
        try { m = JSON.parse(e.data); } catch (err) { return; }
        if (m.inuse && inuse) inuse.textContent = m.inuse;
        if (m.t === 'status') {
          // note: what became of a kept machine (restored, or fresh and
          // why), said once the shell is there.
          status.textContent = m.msg || m.note || pendingNote || '';
          if (!m.msg) pendingNote = '';
          if (!m.msg && focusOnAttach) term.focus();
        } else if (m.t === 'error' || m.t === 'exit') {
          status.textContent = m.msg || '';
          localStorage.removeItem(KEY);
        }
      };
      ws.onclose = function () {
        ws = null;
        btn.hidden = false;
        if (!status.textContent) status.textContent = box.dataset.closed || '';
      };
    }

    // "Reset my machine": the learner's guest ends and nothing of it is
    // kept (POST /api/terminal/reset); the terminal reopens on a fresh one.
    var reset = box.querySelector('.term-reset');
    var pendingNote = '';
    if (reset) {
      reset.addEventListener('click', function () {
        if (box.dataset.resetConfirm && !window.confirm(box.dataset.resetConfirm)) return;
        reset.disabled = true;
        if (ws) { ws.onclose = null; ws.close(); ws = null; }
        fetch('/api/terminal/reset', { method: 'POST', credentials: 'same-origin' }).then(function (r) {
          if (!r.ok) throw new Error(String(r.status));
          pendingNote = box.dataset.resetDone || '';
          focusOnAttach = true;
          open();
        }).catch(function () {
          btn.hidden = false;
          status.textContent = box.dataset.resetFailed || '';
        }).then(function () { reset.disabled = false; });
      });
    }

    btn.addEventListener('click', function () { focusOnAttach = true; open(); });
    if (localStorage.getItem(KEY) === '1') open(); // a reload re-attaches
  }

  document.querySelectorAll('.term').forEach(start);
})();
