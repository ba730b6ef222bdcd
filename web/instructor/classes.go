package instructor

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Classes (cohorts): instructors create them at /instructor/classes, each
// with a join code and link; a learner joins at /join (an action: it creates
// the learner's row); the dashboard and the exports filter with ?class=ID.

// cohortsShow is GET /instructor/classes[?archived=1].
func (s *Area) cohortsShow(w http.ResponseWriter, r *http.Request) {
	s.renderCohorts(w, r, http.StatusOK, "")
}

func (s *Area) renderCohorts(w http.ResponseWriter, r *http.Request, status int, errMsg string) {
	withArchived := r.URL.Query().Get("archived") == "1"
	list, err := s.cfg.Store.Cohorts(r.Context(), true)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	mine, ta, err := s.taCohorts(r)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	tas, err := s.cfg.Store.CohortTAs(r.Context())
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	accounts, err := s.cfg.Store.Instructors(r.Context())
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	boards, err := s.cfg.Store.HiddenLeaderboards(r.Context())
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	v := views.Cohorts{Chrome: s.Chrome(r, s.tr(page.LangOf(r))("cls.title")), Error: errMsg, TA: ta}
	hidden := 0
	for _, c := range list {
		if ta && !slices.Contains(mine, c.ID) {
			continue
		}
		if c.Archived() && !withArchived {
			hidden++
			continue
		}
		id := strconv.FormatInt(c.ID, 10)
		row := views.CohortRow{TAAction: "/instructor/classes/" + id + "/tas"}
		for _, a := range tas[c.ID] {
			row.TAs = append(row.TAs, views.Option{Value: strconv.FormatInt(a.ID, 10), Label: a.Username})
		}
		for _, a := range accounts {
			if a.TA() && !slices.ContainsFunc(tas[c.ID], func(x store.Instructor) bool { return x.ID == a.ID }) {
				row.AddTAs = append(row.AddTAs, views.Option{Value: strconv.FormatInt(a.ID, 10), Label: a.Username})
			}
		}
		row.ID, row.Name, row.Code = id, c.Name, c.Code
		row.JoinURL, row.Href = page.BaseURL(r)+"/join/"+c.Code, "/instructor?class="+id
		// An LMS course's class has no join code that works: none is shown.
		if row.LMS, err = s.cfg.Store.IsLTIClass(r.Context(), c.ID); err != nil {
			s.InternalError(w, r, err)
			return
		}
		row.Members, row.Archived, row.ArchiveAction = c.Members, c.Archived(), "/instructor/classes/"+id+"/archive"
		row.RosterHref, row.GradedHref = rosterHref(c), gradedHref(c)
		row.BoardHidden, row.BoardAction = boards[c.ID], "/instructor/classes/"+id+"/leaderboard"
		v.Classes = append(v.Classes, row)
	}
	if hidden > 0 {
		v.ShowArchivedHref = "/instructor/classes?archived=1"
	}
	s.Render(w, r, status, views.CohortsView(v))
}

// cohortCreate is POST /instructor/classes (field name).
func (s *Area) cohortCreate(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	in, _ := currentInstructor(r)
	c, err := s.cfg.Store.CreateCohort(r.Context(), r.PostFormValue("name"), in.ID)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.renderCohorts(w, r, http.StatusUnprocessableEntity, s.trf(page.LangOf(r), "cls.badname", store.MaxCohortName))
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.log.Info("class created", "by", in.Username, "class", c.Name, "id", c.ID)
	http.Redirect(w, r, "/instructor/classes", http.StatusSeeOther)
}

// cohortArchive is POST /instructor/classes/{id}/archive (archived=1 or 0):
// archiving ends a term without deleting anything.
func (s *Area) cohortArchive(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		s.NotFound(w, r)
		return
	}
	err = s.cfg.Store.ArchiveCohort(r.Context(), id, r.PostFormValue("archived") != "0")
	if errors.Is(err, store.ErrNoCohort) {
		s.NotFound(w, r)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	http.Redirect(w, r, "/instructor/classes?archived=1", http.StatusSeeOther)
}

// cohortBoard is POST /instructor/classes/{id}/leaderboard (hidden=1 or
// 0): hides the class's program leaderboards from its learners, or shows
// them again (who opted in is kept meanwhile; web/leaderboard.go).
func (s *Area) cohortBoard(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		s.NotFound(w, r)
		return
	}
	hidden := r.PostFormValue("hidden") != "0"
	err = s.cfg.Store.SetLeaderboardHidden(r.Context(), id, hidden)
	if errors.Is(err, store.ErrNoCohort) {
		s.NotFound(w, r)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("class leaderboard", "by", in.Username, "id", id, "hidden", hidden)
	http.Redirect(w, r, "/instructor/classes?archived=1", http.StatusSeeOther)
}

// requestScope reads ?class=ID of an instructor page or export. ok is
// false (and a 404 sent) for an unknown class.
func (s *Area) requestScope(w http.ResponseWriter, r *http.Request) (sc store.Scope, c store.Cohort, ok bool) {
	raw := r.URL.Query().Get("class")
	if raw == "" {
		return store.Scope{}, store.Cohort{}, s.taScope(w, r, 0) // a TA goes to their class (roles.go)
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err == nil && id > 0 {
		c, err = s.cfg.Store.Cohort(r.Context(), id)
	}
	if err != nil || id <= 0 {
		if err != nil && !errors.Is(err, store.ErrNoCohort) && !errors.Is(err, strconv.ErrSyntax) && !errors.Is(err, strconv.ErrRange) {
			s.InternalError(w, r, err)
			return store.Scope{}, store.Cohort{}, false
		}
		s.NotFound(w, r)
		return store.Scope{}, store.Cohort{}, false
	}
	if !s.taScope(w, r, id) {
		return store.Scope{}, store.Cohort{}, false
	}
	return store.Scope{Cohort: id}, c, true
}

// classQuery is "?class=ID" for links that keep the dashboard's filter
// ("" for all learners); sep is "?" or "&".
func classQuery(sc store.Scope, sep string) string {
	if sc.Cohort == 0 {
		return ""
	}
	return sep + "class=" + strconv.FormatInt(sc.Cohort, 10)
}

// classPicks is the dashboard's class filter: all learners, then the open
// classes (and the current one even when archived).
func (s *Area) classPicks(r *http.Request, sc store.Scope) ([]views.ClassPick, error) {
	list, err := s.cfg.Store.Cohorts(r.Context(), true)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	t := s.tr(page.LangOf(r))
	mine, ta, err := s.taCohorts(r)
	if err != nil {
		return nil, err
	}
	var picks []views.ClassPick
	if !ta {
		picks = append(picks, views.ClassPick{Label: t("cls.all"), Href: "/instructor", Current: sc.Cohort == 0})
	}
	for _, c := range list {
		if c.Archived() && c.ID != sc.Cohort || ta && !slices.Contains(mine, c.ID) {
			continue
		}
		label := c.Name
		if c.Archived() {
			label += " (" + t("cls.archived") + ")"
		}
		picks = append(picks, views.ClassPick{Label: label, Href: "/instructor?class=" + strconv.FormatInt(c.ID, 10), Current: c.ID == sc.Cohort})
	}
	return picks, nil
}
