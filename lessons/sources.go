package lessons

// A lesson ends with its sources: the spec section, kernel file, vendor
// document or paper each hardware statement rests on. One heading, the same
// on every page of a language, so a learner finds them under one name and
// one anchor in every lesson.

// SourcesID is the heading id of a page's sources section.
const SourcesID = "further-reading"

// SourcesTitle is the sources heading's text in each language.
var SourcesTitle = map[string]string{
	"en": "Sources and further reading",
	"zh": "来源与延伸阅读",
}

// sourcesLike are heading texts that name a sources section: the titles
// above and the variants lessons used before there was one title.
var sourcesLike = map[string]bool{
	"Sources and further reading": true, "Sources": true,
	"来源与延伸阅读": true, "来源与延伸资料": true, "参考来源": true, "资料来源": true,
}

// checkSources holds a page's sources heading to the one title and id of
// its language: any level-2 heading that carries the id or reads like a
// sources title must be exactly `## <SourcesTitle> {#further-reading}`, and
// it should come last (a warning). A page without one is left alone here
// (an instructor's page may have nothing to cite); the built-in course's
// test requires it.
func (r *pageRenderer) checkSources() {
	want, known := SourcesTitle[r.lang]
	last := -1
	for i, h := range r.toc {
		if h.Level == 2 {
			last = i
		}
	}
	for i, h := range r.toc {
		if h.Level != 2 || (h.ID != SourcesID && h.ID != "sources" && !sourcesLike[h.Text]) {
			continue
		}
		line := r.ids[h.ID]
		if known && (h.Text != want || h.ID != SourcesID) {
			r.errAt(line, "sources heading %q {#%s}: every lesson's %s page calls it `## %s {#%s}`", h.Text, h.ID, r.lang, want, SourcesID)
		} else if h.ID != SourcesID {
			r.errAt(line, "sources heading {#%s}: give it {#%s}, the id every lesson uses", h.ID, SourcesID)
		}
		if i != last {
			r.warnAt(line, "sources heading %q is not the page's last section: the sources end the lesson", h.Text)
		}
	}
}
