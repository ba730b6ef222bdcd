package sandbox

// TableText is a table's words in one language, the same shape as the
// Table it belongs to. An empty part falls back to the English one.
type TableText struct {
	Title   string     `json:"title,omitempty"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
}

// Same is text that reads the same in every language: figures, units,
// device and counter names, code.
func Same(s string) Text { return Text{"en": s, "zh": s} }

// NewTable starts a table whose title and column headers a learner reads,
// one Text per language. Add rows with AddRow. The languages are those of
// the title.
//
//	t := sandbox.NewTable(sandbox.Text{"en": "mlock attempts", "zh": "mlock 尝试"},
//		sandbox.Text{"en": "attempt", "zh": "尝试"}, sandbox.Same("RLIMIT_MEMLOCK"))
//	t.AddRow(sandbox.Same("1"), sandbox.Text{"en": "refused", "zh": "被拒绝"})
func NewTable(title Text, columns ...Text) *Table {
	t := &Table{Title: title["en"], Columns: make([]string, len(columns)), Rows: [][]string{}}
	for i, c := range columns {
		t.Columns[i] = c["en"]
	}
	for lang, s := range title {
		if lang == "en" {
			continue
		}
		tt := &TableText{Title: s, Columns: make([]string, len(columns))}
		for i, c := range columns {
			tt.Columns[i] = c.Get(lang)
		}
		if t.I18n == nil {
			t.I18n = map[string]*TableText{}
		}
		t.I18n[lang] = tt
	}
	return t
}

// AddRow appends one row, a Text per cell (Same for language-free cells).
func (t *Table) AddRow(cells ...Text) {
	en := make([]string, len(cells))
	for i, c := range cells {
		en[i] = c["en"]
	}
	t.Rows = append(t.Rows, en)
	for lang, tt := range t.I18n {
		row := make([]string, len(cells))
		for i, c := range cells {
			row[i] = c.Get(lang)
		}
		tt.Rows = append(tt.Rows, row)
	}
}

// In returns the table in lang: its I18n version where there is one (part
// by part), else the table itself.
func (t *Table) In(lang string) *Table {
	if t == nil || t.I18n[lang] == nil {
		return t
	}
	tt := t.I18n[lang]
	out := &Table{Title: t.Title, Columns: t.Columns, Rows: t.Rows}
	if tt.Title != "" {
		out.Title = tt.Title
	}
	if len(tt.Columns) == len(t.Columns) {
		out.Columns = tt.Columns
	}
	if len(tt.Rows) == len(t.Rows) {
		out.Rows = tt.Rows
	}
	return out
}
