// A lesson's :::task steps (web/task_check.go): Check asks the lab to run
// the task's verify script in the learner's own terminal machine, and
// shows what it said: passed (the task is marked done), the script's hint,
// or that no terminal is open yet.
(function () {
  'use strict';

  function show(box, cls, message, hint) {
    box.textContent = '';
    box.className = 'task-result ' + cls;
    var p = document.createElement('p');
    p.textContent = message;
    box.appendChild(p);
    if (hint) {
      var pre = document.createElement('pre');
      pre.className = 'task-hint';
      pre.setAttribute('data-testid', 'task-hint');
      pre.textContent = hint;
      box.appendChild(pre);
    }
  }

  function setup(root) {
    var btn = root.querySelector('.task-check');
    var box = root.querySelector('.task-result');
    var state = root.querySelector('.task-state');
    if (!btn || !box) return;
    btn.addEventListener('click', async function () {
      btn.disabled = true;
      root.setAttribute('aria-busy', 'true');
      show(box, 'task-pending', root.dataset.checking || '…');
      try {
        var url = root.dataset.endpoint + '?lang=' + encodeURIComponent(root.dataset.lang || 'zh');
        var res = await fetch(url, {
          method: 'POST',
          headers: { Accept: 'application/json' },
          credentials: 'same-origin',
        });
        var data = await res.json();
        if (!res.ok) {
          show(box, 'task-error', data && data.error ? data.error.message : res.statusText);
          return;
        }
        show(box, 'task-' + data.status, data.message, data.hint);
        if (data.checks_text) {
          // The page was rendered before this check: keep its count true.
          var checks = root.querySelector('.task-checks');
          if (!checks) {
            checks = document.createElement('span');
            checks.className = 'task-checks';
            btn.after(checks);
          }
          checks.textContent = data.checks_text;
        }
        root.dataset.status = data.status;
        if (data.done) {
          root.classList.add('task-done');
          if (state) state.textContent = root.dataset.doneText;
        }
      } catch (e) {
        show(box, 'task-error', String(e));
      } finally {
        btn.disabled = false;
        root.removeAttribute('aria-busy');
      }
    });
  }

  document.querySelectorAll('[data-testid="task"]').forEach(setup);
})();
