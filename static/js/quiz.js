// quiz.js submits checkpoint questions inline. Without it the forms post
// normally and the server answers with the lesson page showing the result;
// with it the answer goes as JSON and the question is replaced by the
// server's own re-rendering (per-option verdicts, feedback, explanation),
// so both paths show the same thing and no answer ever lives in the page.
(function () {
  "use strict";
  // Loaded once per page, but be safe: a second copy must not submit twice.
  if (window.rdmalabQuiz) return;
  window.rdmalabQuiz = true;

  function answerOf(form, type) {
    var values = new FormData(form).getAll("answer").map(String);
    switch (type) {
      case "single":
        return values.length ? values[0] : null;
      case "multi":
      case "order":
        return values;
      case "numeric":
        var s = (values[0] || "").trim();
        if (s === "") return null;
        var n = Number(s);
        // Not a number: send the text so the server explains what it wants.
        return isFinite(n) ? n : s;
    }
    return null;
  }

  function showError(form, message) {
    var box = form.querySelector(".quiz-error");
    if (!box) return;
    box.textContent = message;
    box.hidden = false;
  }

  async function submit(event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("quiz-form")) return;
    var section = form.closest("section.quiz");
    if (!section) return;
    event.preventDefault();
    var button = event.submitter || form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    var reveal = event.submitter && event.submitter.name === "reveal";
    var body = {
      answer: answerOf(form, section.dataset.type),
      anchor: section.id,
      lesson: form.elements.lesson ? form.elements.lesson.value : "",
    };
    if (reveal) { delete body.answer; body.reveal = true; }
    try {
      var res = await fetch(form.action, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        credentials: "same-origin",
        body: JSON.stringify(body),
      });
      var data = await res.json();
      if (!res.ok) {
        showError(form, data && data.error ? data.error.message : form.dataset.networkError);
        return;
      }
      var tmp = document.createElement("template");
      tmp.innerHTML = data.html;
      var fresh = tmp.content.querySelector("section.quiz");
      if (!fresh) return;
      section.replaceWith(fresh);
      var result = fresh.querySelector("[data-testid=result]");
      if (result) result.focus();
      updateScore(fresh, data);
    } catch (e) {
      showError(form, form.dataset.networkError);
    } finally {
      if (button && button.isConnected) button.disabled = false;
    }
  }

  // The checkpoint's "answered correctly" count follows inline answers too.
  function updateScore(section, data) {
    if (!data.ever_correct) return;
    var id = section.dataset.question;
    document.querySelectorAll("section.quiz[data-question]").forEach(function (q) {
      if (q.dataset.question !== id) return;
      var status = q.querySelector("[data-testid=quiz-status]");
      if (status) status.dataset.best = "true";
    });
    var cp = document.querySelector("[data-testid=checkpoint]");
    var score = cp && cp.querySelector("[data-testid=checkpoint-score]");
    if (!score) return;
    var total = cp.querySelectorAll("section.quiz").length;
    var right = cp.querySelectorAll("section.quiz [data-testid=quiz-status][data-best=true]").length;
    score.textContent = score.textContent.replace(/\d+\/\d+\s*$/, right + "/" + total);
  }

  document.addEventListener("submit", submit);
})();
