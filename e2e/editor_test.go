package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestEditorKeys: lesson 04's editor as a C programmer types into it
// (real key events): new lines indent with a tab as the starters do; a
// '}' typed after an auto-closed '{' and Enter does not leave two; the
// page says what Tab, Ctrl-] and Esc do (zh and en), Tab leaves the editor
// unless "Tab indents" is on, and then Esc, Tab leaves it; each editor has
// its own name.
func TestEditorKeys(t *testing.T) {
	flow(t)
	b := newBrowser(t, shared)
	const sel = `[data-program=open-device]`
	text := `document.querySelector('` + sel + `')._editor.get()`
	inEditor := `document.querySelector('` + sel + ` .cm-editor').contains(document.activeElement)`
	for _, lang := range []string{"zh", "en"} {
		b.open("/lessons/04-first-program?lang=" + lang)
		b.waitFor("the editors", settledJS+` && document.querySelectorAll('.program .cm-editor').length === 4`, stepTimeout)
		keys := b.text(sel + ` [data-testid=program-keys]`)
		for _, w := range []string{"Tab", "Ctrl-]", "Esc"} {
			if !strings.Contains(keys, w) {
				t.Errorf("%s: the editor's key help %q does not mention %s", lang, keys, w)
			}
		}
		if lang == "zh" && eval[bool](b, hasCJK+`(`+jsString(keys)+`) === false`) {
			t.Errorf("zh: the key help is not Chinese: %q", keys)
		}
		if d := eval[string](b, `document.querySelector('`+sel+` .cm-content').getAttribute('aria-describedby') || ''`); d == "" || b.count("#"+d+"[data-testid=program-keys]") != 1 {
			t.Errorf("%s: the editor is not described by its key help (aria-describedby %q)", lang, d)
		}
		names := eval[[]string](b, `Array.from(document.querySelectorAll('.program .cm-content')).map(e => e.getAttribute('aria-label'))`)
		if len(uniq(names)) != 4 {
			t.Errorf("%s: the four editors' names are not distinct: %q", lang, names)
		}
	}

	// Indentation and braces, typed.
	b.do("empty the editor", evalVoid(`document.querySelector('`+sel+`')._editor.set('int main(void) ')`))
	b.do("focus the editor", chromedp.Focus(chromedp.CSS(sel+` .cm-content`)))
	b.do("caret at the end", evalVoid(`(function(){ var v = document.querySelector('`+sel+`')._editor.view; v.dispatch({selection: {anchor: v.state.doc.length}}); })()`))
	for _, k := range []string{"{", kb.Enter, "return 0;", kb.Enter, "}"} {
		if k == kb.Enter {
			pressEnter(b)
		} else {
			b.do("type "+k, chromedp.KeyEvent(k))
		}
	}
	const want = "int main(void) {\n\treturn 0;\n}"
	if got := eval[string](b, text); got != want {
		t.Errorf("typed `{`, Enter, `return 0;`, Enter, `}`: the editor holds %q, want %q (one '}', tab indentation)", got, want)
	}

	// Tab leaves the editor by default; the text is unchanged.
	b.do("Tab", chromedp.KeyEvent(kb.Tab))
	if eval[bool](b, inEditor) {
		t.Errorf("Tab kept the focus in the editor with \"Tab indents\" off")
	}
	if got := eval[string](b, text); got != want {
		t.Errorf("Tab changed the code to %q", got)
	}

	// "Tab indents" on: Tab indents the line; Esc then Tab leaves.
	b.click(sel + ` [data-testid=program-tabindent]`)
	if !eval[bool](b, `Array.from(document.querySelectorAll('[data-testid=program-tabindent]')).every(c => c.checked)`) {
		t.Errorf("\"Tab indents\" is one choice for the page: not every editor's switch is on")
	}
	b.do("focus the editor", chromedp.Focus(chromedp.CSS(sel+` .cm-content`)))
	b.do("caret on line 2", evalVoid(`(function(){ var v = document.querySelector('`+sel+`')._editor.view; v.dispatch({selection: {anchor: v.state.doc.line(2).to}}); })()`))
	b.do("Tab", chromedp.KeyEvent(kb.Tab))
	if !eval[bool](b, inEditor) {
		t.Errorf("with \"Tab indents\" on, Tab left the editor")
	}
	if got := eval[string](b, text); got != "int main(void) {\n\t\treturn 0;\n}" {
		t.Errorf("with \"Tab indents\" on, Tab gave %q, want line 2 indented once more", got)
	}
	b.do("Esc, Tab", chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent(kb.Tab))
	if eval[bool](b, inEditor) {
		t.Errorf("Esc then Tab did not leave the editor with \"Tab indents\" on")
	}
	// The choice is remembered for the next visit.
	b.open("/lessons/04-first-program?lang=en")
	b.waitFor("the editors", settledJS, stepTimeout)
	if !eval[bool](b, `document.querySelector('`+sel+` [data-testid=program-tabindent]').checked`) {
		t.Errorf("\"Tab indents\" was not remembered after a reload")
	}
}

// pressEnter presses Enter as a keyboard does in an editor: a key down
// and up, no separate "char" event (chromedp's KeyEvent sends one, and
// CodeMirror then gets a newline from its Enter command and another from
// the character).
func pressEnter(b *browser) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
		}); err != nil {
			b.t.Fatalf("press Enter: %v", err)
		}
	}
}
