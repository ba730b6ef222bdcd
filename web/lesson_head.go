package web

import (
	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/views"
)

// lessonAssets are the stylesheets and scripts the head of page (l in
// lang) links: those of every component its segments render, in page
// order. The lesson page renders its segments in separate renders (the
// skeleton and its holes), so the components cannot place their assets
// themselves; this runs once per skeleton, that is once per content load
// and language.
//
// It must choose as segment (lesson_segments.go) and diagramSegment
// (lesson_visuals.go) do: a segment whose component changes needs the
// change here too (TestLessonAssetsOnce checks the built-in course).
func lessonAssets(c *lessons.Course, l *lessons.Lesson, page *lessons.Page, lang string) []views.Assets {
	var out []views.Assets
	for _, seg := range page.Body {
		switch seg.Kind {
		case lessons.SegDiagram:
			switch {
			case seg.ID == "cpu-budget":
				out = append(out, views.CPUBudgetAssets)
			case seg.ID == "worth-it":
				out = append(out, views.WorthItAssets)
			case lessons.DiagramSteps(seg.ID, lang) != nil: // drawing's PathDiagram
				out = append(out, views.PathDiagramAssets)
			}
		case lessons.SegExperiment:
			out = append(out, views.ExperimentAssets)
		case lessons.SegTerminal:
			out = append(out, views.TerminalAssets)
		case lessons.SegTask:
			out = append(out, views.TaskAssets)
		case lessons.SegProgram:
			out = append(out, views.ProgramAssets)
		case lessons.SegQuiz:
			if c.Questions[seg.ID] != nil {
				out = append(out, views.QuizAssets)
			}
		case lessons.SegCheckpoint:
			if l.Quiz != nil {
				out = append(out, views.QuizAssets)
			}
		}
	}
	return out
}
