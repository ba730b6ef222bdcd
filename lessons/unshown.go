package lessons

// unshownQuestions warns about questions no page shows: the lesson has no
// ::checkpoint (which shows every question of its quiz.yaml not placed
// elsewhere) and no page of the course places the question with ::quiz.
// Such a question never reaches a learner, so its statistics stay empty.
func (ld *loader) unshownQuestions(srcs []*lessonSource) {
	placed := map[string]bool{}
	for _, s := range srcs {
		for _, p := range s.lesson.Pages {
			for _, id := range p.QuestionIDs {
				placed[id] = true
			}
		}
	}
	for _, s := range srcs {
		l := s.lesson
		if l.Quiz == nil || ld.brokenQuiz[l.Slug] {
			continue
		}
		checkpoint := false
		for _, p := range l.Pages {
			for _, seg := range p.Body {
				checkpoint = checkpoint || seg.Kind == SegCheckpoint
			}
		}
		if checkpoint {
			continue
		}
		for _, q := range l.Quiz.Questions {
			if !placed[q.ID] {
				ld.warnAt(q.File, q.Line, "%s: no page shows this question: add `::quiz %s` where it belongs, or `::checkpoint` to the lesson", q.ID, q.ID)
			}
		}
	}
}
