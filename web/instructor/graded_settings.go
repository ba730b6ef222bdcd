package instructor

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/quiz"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Graded mode, the instructor's side: /instructor/classes/{id}/graded sets
// the class's time zone and, per lesson with questions, practice or graded
// (dates in the class's zone, attempt limit, which answer counts). A TA
// sees it read only. The rules are quiz.Graded's (graded.go).

// commonZones are offered in the zone field's list; any IANA name works.
var commonZones = []string{"Asia/Shanghai", "Asia/Hong_Kong", "Asia/Taipei", "Asia/Singapore", "Asia/Tokyo", "Asia/Seoul",
	"Asia/Kolkata", "Europe/London", "Europe/Berlin", "Europe/Paris", "America/New_York", "America/Chicago",
	"America/Los_Angeles", "Australia/Sydney", "UTC"}

// LocalInput is the layout of a datetime-local form value (the graded
// settings' open and close fields, in the class's zone).
const LocalInput = "2006-01-02T15:04"

func gradedHref(c store.Cohort) string {
	return "/instructor/classes/" + strconv.FormatInt(c.ID, 10) + "/graded"
}

// zoneShown is a zone's name with its UTC offset now, in lang.
func zoneShown(lang string, loc *time.Location, now time.Time) string {
	off := now.In(loc).Format("-07:00")
	if lang == "zh" {
		return loc.String() + "（UTC" + off + "）"
	}
	return loc.String() + " (UTC" + off + ")"
}

// gradedShow is GET /instructor/classes/{id}/graded.
func (s *Area) gradedShow(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.taScope(w, r, c.ID) {
		return
	}
	v := views.GradedSettings{}
	if r.URL.Query().Has("saved") {
		v.Notice = s.tr(page.LangOf(r))("gset.saved")
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("resent")); err == nil {
		v.Notice = s.trf(page.LangOf(r), "gset.resent", n)
	}
	s.renderGraded(w, r, c, http.StatusOK, v)
}

func (s *Area) renderGraded(w http.ResponseWriter, r *http.Request, c store.Cohort, status int, v views.GradedSettings) {
	lang := page.LangOf(r)
	t := s.tr(lang)
	set, err := s.cfg.Store.GradedLessons(r.Context(), c.ID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	loc := page.ZoneOf(c.TimeZone)
	now := s.now()
	id := strconv.FormatInt(c.ID, 10)
	v.Chrome = s.Chrome(r, t("gset.title")+" · "+c.Name)
	v.ClassName, v.ReadOnly = c.Name, in.TA()
	v.Dashboard, v.Gradebook = "/instructor?class="+id, "/instructor/gradebook?class="+id
	v.Zone, v.ZoneShown, v.Zones, v.ZoneAction = loc.String(), zoneShown(lang, loc, now), commonZones, gradedHref(c)+"/zone"
	if s.cfg.LTI != nil && !v.ReadOnly {
		if lms, err := s.cfg.Store.IsLTIClass(r.Context(), c.ID); err != nil {
			s.InternalError(w, r, err)
			return
		} else if lms {
			v.ResendAction = gradedHref(c) + "/lti-resend"
		}
	}
	for _, l := range s.course().Lessons {
		if l.Quiz == nil || len(l.Quiz.Questions) == 0 {
			continue
		}
		row := views.GradedRow{Slug: l.Slug, Title: lessonTitle(s.course(), l.Slug, lang), Action: gradedHref(c),
			Limit: 3, Counts: string(quiz.CountBest),
			// A new graded lesson: open now, close in a week (to the hour).
			Opens: now.In(loc).Truncate(time.Hour).Format(LocalInput), Closes: now.In(loc).Truncate(time.Hour).Add(7 * 24 * time.Hour).Format(LocalInput)}
		if g, ok := set[l.Slug]; ok {
			row.Graded, row.Limit, row.Counts = true, g.Limit, g.Counts
			row.Opens, row.Closes = g.Opens.In(loc).Format(LocalInput), g.Closes.In(loc).Format(LocalInput)
			row.OpensShown, row.ClosesShown = page.ZoneTime(lang, g.Opens, loc), page.ZoneTime(lang, g.Closes, loc)
		}
		v.Rows = append(v.Rows, row)
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.GradedSettingsView(v))
}

// gradedZone is POST /instructor/classes/{id}/graded/zone (field zone).
func (s *Area) gradedZone(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	zone := strings.TrimSpace(r.PostFormValue("zone"))
	err := s.cfg.Store.SetCohortTimeZone(r.Context(), c.ID, zone)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.renderGraded(w, r, c, http.StatusUnprocessableEntity, views.GradedSettings{Error: s.tr(page.LangOf(r))("gset.err.zone")})
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("class time zone set", "by", in.Username, "class", c.ID, "zone", zone)
	http.Redirect(w, r, gradedHref(c)+"?saved=1", http.StatusSeeOther)
}

// gradedSet is POST /instructor/classes/{id}/graded: fields lesson, mode
// (practice or graded), and for graded opens and closes (datetime-local
// in the class's zone), limit and counts.
func (s *Area) gradedSet(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	lang := page.LangOf(r)
	t := s.tr(lang)
	fail := func(msg string) {
		s.renderGraded(w, r, c, http.StatusUnprocessableEntity, views.GradedSettings{Error: msg})
	}
	slug := r.PostFormValue("lesson")
	l := s.course().Lesson(slug)
	if l == nil || l.Quiz == nil || len(l.Quiz.Questions) == 0 {
		fail(t("gset.err.lesson"))
		return
	}
	in, _ := currentInstructor(r)
	if r.PostFormValue("mode") != "graded" {
		if err := s.cfg.Store.ClearGradedLesson(r.Context(), c.ID, slug); err != nil {
			s.InternalError(w, r, err)
			return
		}
		s.log.Info("lesson set to practice", "by", in.Username, "class", c.ID, "lesson", slug)
		s.rescore(r, c.ID, slug)
		http.Redirect(w, r, gradedHref(c)+"?saved=1", http.StatusSeeOther)
		return
	}
	loc := page.ZoneOf(c.TimeZone)
	opens, err1 := time.ParseInLocation(LocalInput, r.PostFormValue("opens"), loc)
	closes, err2 := time.ParseInLocation(LocalInput, r.PostFormValue("closes"), loc)
	limit, err3 := strconv.Atoi(r.PostFormValue("limit"))
	g := quiz.Graded{Opens: opens, Closes: closes, Limit: limit, Counts: quiz.Counts(r.PostFormValue("counts"))}
	switch {
	case err1 != nil || err2 != nil || !opens.Before(closes):
		fail(t("gset.err.dates"))
		return
	case err3 != nil || limit < 1 || limit > quiz.MaxLimit:
		fail(s.trf(lang, "gset.err.limit", quiz.MaxLimit))
		return
	case !g.Counts.Valid():
		fail(t("gset.err.counts"))
		return
	}
	if err := s.cfg.Store.SetGradedLesson(r.Context(), store.GradedLesson{Cohort: c.ID, Lesson: slug, Opens: opens, Closes: closes,
		Limit: limit, Counts: string(g.Counts)}, in.ID); err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.log.Info("lesson set to graded", "by", in.Username, "class", c.ID, "lesson", slug,
		"opens", opens.UTC(), "closes", closes.UTC(), "limit", limit, "counts", g.Counts)
	s.rescore(r, c.ID, slug)
	http.Redirect(w, r, gradedHref(c)+"?saved=1", http.StatusSeeOther)
}

// rescore queues the LMS scores of the class's learners on lesson again:
// its setting changed, so the figure the LMS holds may be stale. A
// failure is logged (the setting is saved; "send again" retries).
func (s *Area) rescore(r *http.Request, cohort int64, lesson string) {
	if _, err := s.cfg.Learners.RescoreLTI(r.Context(), cohort, lesson); err != nil {
		s.log.Error("lti rescore", "class", cohort, "lesson", lesson, "err", err)
	}
}

// gradedResend is POST /instructor/classes/{id}/graded/lti-resend: every
// LMS score of the class goes out again, as the gradebook has it now.
func (s *Area) gradedResend(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	n, err := s.cfg.Learners.RescoreLTI(r.Context(), c.ID, "")
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("lti scores sent again", "by", in.Username, "class", c.ID, "learners", n)
	http.Redirect(w, r, gradedHref(c)+"?resent="+strconv.Itoa(n), http.StatusSeeOther)
}

// lessonModes says each lesson's mode in class c, in course order, for the
// gradebook's header and the dashboard: "practice", or "graded" with its
// dates in the class's zone, attempt limit and what counts.
func (s *Area) lessonModes(r *http.Request, c store.Cohort) ([]string, map[string]string, error) {
	set, err := s.cfg.Store.GradedLessons(r.Context(), c.ID)
	if err != nil {
		return nil, nil, err
	}
	lang := page.LangOf(r)
	t := s.tr(lang)
	loc := page.ZoneOf(c.TimeZone)
	var modes []string
	graded := map[string]string{}
	for _, l := range s.course().Lessons {
		g, ok := set[l.Slug]
		if !ok {
			modes = append(modes, t("graded.mode.practice"))
			continue
		}
		m := t("graded.mode.graded") + " · " + page.ZoneTime(lang, g.Opens, loc) + " – " + page.ZoneTime(lang, g.Closes, loc) +
			" · " + t("gset.limit") + " " + strconv.Itoa(g.Limit) + " · " + t("gset.counts") + " " + t("graded.counts."+g.Counts)
		modes = append(modes, m)
		graded[l.Slug] = m
	}
	return modes, graded, nil
}
