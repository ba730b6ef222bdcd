// The lab's CodeMirror 6 bundle for :::program editors (static/js/program.js):
// basicSetup (line numbers, highlighting, bracket matching, undo history,
// search), the C/C++ language, lint diagnostics at their lines, and colours
// from the page's stylesheet (static/css/program.css: token classes from
// classHighlighter, so light and dark follow the page with AA contrast).
//
// Keys: Tab and Shift-Tab leave the editor like any form field, unless the
// learner turns on "Tab indents" (opts.tabIndents / setTabIndents); then
// Escape followed by Tab leaves it (CodeMirror's tab-focus escape).
// Ctrl-] and Ctrl-[ indent and dedent in either mode. New lines indent
// with a tab, as the starters do.
import { EditorView, basicSetup } from "codemirror";
import { EditorState, Compartment, Prec, EditorSelection } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { indentUnit, syntaxHighlighting, matchBrackets } from "@codemirror/language";
import { indentWithTab } from "@codemirror/commands";
import { classHighlighter } from "@lezer/highlight";
import { cpp } from "@codemirror/lang-cpp";
import { setDiagnostics, lintGutter } from "@codemirror/lint";

// closeBraceOver: typing "}" on a line that holds only blanks, when the
// next thing after the caret is the "}" that closes the caret's block (the
// one closeBrackets inserted after "{" and Enter moved down), steps over it
// instead of adding a second one: the blank line goes and the caret ends
// after the existing brace. closeBrackets alone only skips a brace right
// after the caret on the same line.
function closeBraceOver(view, from, to, text) {
  if (text !== "}" || from !== to || view.state.selection.ranges.length !== 1) return false;
  const state = view.state, doc = state.doc, line = doc.lineAt(from);
  if (line.text.slice(0, from - line.from).trim() !== "") return false;
  const after = doc.sliceString(from, Math.min(doc.length, from + 400));
  const m = /^\s*\}/.exec(after);
  if (!m || after.slice(0, m[0].length - 1).indexOf("\n") < 0) return false;
  const brace = from + m[0].length - 1;
  const open = matchBrackets(state, brace + 1, -1);
  if (!open || !open.matched || !open.end || open.end.from >= line.from) return false;
  const braceLine = doc.lineAt(brace);
  view.dispatch({
    changes: { from: line.from, to: braceLine.from },
    selection: EditorSelection.cursor(brace + 1 - (braceLine.from - line.from)),
    scrollIntoView: true,
    userEvent: "input.type",
  });
  return true;
}

function create(parent, opts) {
  const dark = new Compartment();
  const tabKeys = new Compartment();
  const isDark = () => EditorView.darkTheme.of(!!opts.dark);
  // tabindex: the content is focusable anyway (contenteditable); said
  // out loud, checkers such as axe-core see the scroller's focusable content.
  const contentAttrs = { "aria-label": opts.label || "C source", tabindex: "0", "data-testid": "program-cm" };
  if (opts.describedBy) contentAttrs["aria-describedby"] = opts.describedBy;
  const tabs = () => opts.tabIndents ? Prec.high(keymap.of([indentWithTab])) : [];
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: opts.doc || "",
      extensions: [
        basicSetup,
        cpp(),
        lintGutter(),
        indentUnit.of("\t"),
        EditorState.tabSize.of(4),
        syntaxHighlighting(classHighlighter),
        dark.of(isDark()),
        tabKeys.of(tabs()),
        Prec.high(EditorView.inputHandler.of(closeBraceOver)),
        EditorView.contentAttributes.of(contentAttrs),
        EditorView.updateListener.of((u) => { if (u.docChanged && opts.onChange) opts.onChange(); }),
      ],
    }),
  });
  return {
    view,
    get value() { return view.state.doc.toString(); },
    set value(s) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: s } }); },
    setDark(d) { opts.dark = d; view.dispatch({ effects: dark.reconfigure(isDark()) }); },
    setTabIndents(on) { opts.tabIndents = on; view.dispatch({ effects: tabKeys.reconfigure(tabs()) }); },
    // diags: [{line, message, severity}] at 1-based lines
    setDiagnostics(diags) {
      const doc = view.state.doc;
      const ds = diags.filter((d) => d.line >= 1 && d.line <= doc.lines).map((d) => {
        const l = doc.line(d.line);
        return { from: l.from, to: l.to, severity: d.severity === "warning" ? "warning" : "error", message: d.message };
      });
      view.dispatch(setDiagnostics(view.state, ds));
    },
    goto(line) {
      const l = view.state.doc.line(Math.min(Math.max(line, 1), view.state.doc.lines));
      view.dispatch({ selection: { anchor: l.from, head: l.to }, scrollIntoView: true });
      view.focus();
    },
  };
}

window.LabEditor = { create };
