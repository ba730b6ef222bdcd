// The lab's CodeMirror 6 bundle for :::program editors (static/js/program.js):
// basicSetup (line numbers, highlighting, bracket matching, undo history,
// search), the C/C++ language, lint diagnostics at their lines, and a
// light/dark theme that follows the page. Tab is not bound (Tab and
// Shift-Tab leave the editor, as in any form field); Escape then Tab also
// leaves it.
import { EditorView, basicSetup } from "codemirror";
import { EditorState, Compartment } from "@codemirror/state";
import { cpp } from "@codemirror/lang-cpp";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { oneDark } from "@codemirror/theme-one-dark";

function create(parent, opts) {
  const theme = new Compartment();
  const dark = () => opts.dark ? [oneDark] : [];
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: opts.doc || "",
      extensions: [
        basicSetup,
        cpp(),
        lintGutter(),
        theme.of(dark()),
        EditorView.contentAttributes.of({ "aria-label": opts.label || "C source", "data-testid": "program-cm" }),
        EditorView.updateListener.of((u) => { if (u.docChanged && opts.onChange) opts.onChange(); }),
      ],
    }),
  });
  return {
    view,
    get value() { return view.state.doc.toString(); },
    set value(s) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: s } }); },
    setDark(d) { opts.dark = d; view.dispatch({ effects: theme.reconfigure(dark()) }); },
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
