package web

import (
	"github.com/a-h/templ"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/web/views"
)

// segment chooses the component for one body segment of a lesson page: the
// one place where directive segments meet their features (diagrams,
// experiment widgets, quiz questions, the checkpoint).
func (s *Server) segment(lr *lessonRequest, seg lessons.Segment) templ.Component {
	switch seg.Kind {
	case lessons.SegHTML:
		// Trusted: rendered by lessons from the course's own Markdown/SVG.
		return templ.Raw(seg.HTML)
	case lessons.SegDiagram:
		return s.diagramSegment(lr, seg) // lesson_visuals.go
	case lessons.SegExperiment:
		return s.experimentSegment(lr, seg)
	case lessons.SegTerminal:
		return s.terminalSegment(lr) // terminal.go
	case lessons.SegTask:
		return s.taskSegment(lr, seg) // task_check.go
	case lessons.SegProgram:
		return s.programSegment(lr, seg) // program.go
	case lessons.SegQuiz:
		return s.quizSegment(lr, seg)
	case lessons.SegCheckpoint:
		return s.checkpointSegment(lr, seg)
	default:
		// A kind lessons emits that this switch does not handle (a new
		// directive wired into lessons but not yet here): show its kind and
		// id rather than drop it silently.
		return views.Placeholder(string(seg.Kind), seg.ID, string(seg.Kind)+" "+seg.ID)
	}
}
