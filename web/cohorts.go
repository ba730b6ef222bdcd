package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/views"
)

// Classes (cohorts): instructors create them at /instructor/classes, each
// with a join code and link; a learner joins at /join (an action: it creates
// the learner's row); the dashboard and the exports filter with ?class=ID.

// baseURL is the lab's address as the browser reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if secureRequest(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// cohortsShow is GET /instructor/classes[?archived=1].
func (s *Server) cohortsShow(w http.ResponseWriter, r *http.Request) {
	s.renderCohorts(w, r, http.StatusOK, "")
}

func (s *Server) renderCohorts(w http.ResponseWriter, r *http.Request, status int, errMsg string) {
	withArchived := r.URL.Query().Get("archived") == "1"
	list, err := s.cfg.Store.Cohorts(r.Context(), true)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	mine, ta, err := s.taCohorts(r)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	tas, err := s.cfg.Store.CohortTAs(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	accounts, err := s.cfg.Store.Instructors(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	v := views.Cohorts{Chrome: s.chrome(r, tr(langOf(r))("cls.title")), Error: errMsg, TA: ta}
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
		row.JoinURL, row.Href = baseURL(r)+"/join/"+c.Code, "/instructor?class="+id
		row.Members, row.Archived, row.ArchiveAction = c.Members, c.Archived(), "/instructor/classes/"+id+"/archive"
		row.RosterHref, row.GradedHref = rosterHref(c), gradedHref(c)
		v.Classes = append(v.Classes, row)
	}
	if hidden > 0 {
		v.ShowArchivedHref = "/instructor/classes?archived=1"
	}
	s.render(w, r, status, views.CohortsView(v))
}

// cohortCreate is POST /instructor/classes (field name).
func (s *Server) cohortCreate(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	in, _ := currentInstructor(r)
	c, err := s.cfg.Store.CreateCohort(r.Context(), r.PostFormValue("name"), in.ID)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.renderCohorts(w, r, http.StatusUnprocessableEntity, trf(langOf(r), "cls.badname", store.MaxCohortName))
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	s.log.Info("class created", "by", in.Username, "class", c.Name, "id", c.ID)
	http.Redirect(w, r, "/instructor/classes", http.StatusSeeOther)
}

// cohortArchive is POST /instructor/classes/{id}/archive (archived=1 or 0):
// archiving ends a term without deleting anything.
func (s *Server) cohortArchive(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		s.notFound(w, r)
		return
	}
	err = s.cfg.Store.ArchiveCohort(r.Context(), id, r.PostFormValue("archived") != "0")
	if errors.Is(err, store.ErrNoCohort) {
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	http.Redirect(w, r, "/instructor/classes?archived=1", http.StatusSeeOther)
}

// requestScope reads ?class=ID of an instructor page or export. ok is
// false (and a 404 sent) for an unknown class.
func (s *Server) requestScope(w http.ResponseWriter, r *http.Request) (sc store.Scope, c store.Cohort, ok bool) {
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
			s.internalError(w, r, err)
			return store.Scope{}, store.Cohort{}, false
		}
		s.notFound(w, r)
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
func (s *Server) classPicks(r *http.Request, sc store.Scope) ([]views.ClassPick, error) {
	list, err := s.cfg.Store.Cohorts(r.Context(), true)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	t := tr(langOf(r))
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

// joinShow is GET /join and GET /join/{code}: the learner types a code or
// confirms the class a link names. A visit changes nothing.
func (s *Server) joinShow(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lang := langOf(r)
	v := views.Join{Chrome: s.chrome(r, tr(lang)("join.title"))}
	status := http.StatusOK
	mine, err := s.cfg.Store.LearnerCohorts(ctx, learnerID(r))
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	var names []string
	for _, c := range mine {
		names = append(names, c.Name)
		if j := r.URL.Query().Get("joined"); j != "" && j == strconv.FormatInt(c.ID, 10) {
			v.Joined = c.Name
		}
	}
	v.Mine = strings.Join(names, ", ")
	if code := chi.URLParam(r, "code"); code != "" && v.Joined == "" {
		c, err := s.cfg.Store.OpenCohortByCode(ctx, code)
		switch {
		case errors.Is(err, store.ErrNoCohort):
			status = http.StatusNotFound
			v.Error = tr(lang)("join.bad")
		case err != nil:
			s.internalError(w, r, err)
			return
		default:
			v.Code, v.ClassName = c.Code, c.Name
			if v.NeedSeat, err = s.cfg.Store.CohortHasRoster(ctx, c.ID); err != nil {
				s.internalError(w, r, err)
				return
			}
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, status, views.JoinView(v))
}

// joinPost is POST /join (fields code and, for a class with a roster,
// seat: the learner's personal code). Claiming a seat may switch the
// browser to the seat's learner id (roster.go, store.ClaimSeat): the
// cookie is set to it here.
func (s *Server) joinPost(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	lang := langOf(r)
	code, seat := r.PostFormValue("code"), r.PostFormValue("seat")
	refuse := func(status int, msg string, needSeat bool) {
		w.Header().Set("Cache-Control", "no-store")
		s.render(w, r, status, views.JoinView(views.Join{Chrome: s.chrome(r, tr(lang)("join.title")),
			Code: code, Error: msg, NeedSeat: needSeat}))
	}
	var (
		c   store.Cohort
		err error
	)
	if seat != "" {
		var cl store.Claim
		cl, err = s.cfg.Store.ClaimSeat(ctx, learnerID(r), code, seat)
		switch {
		case errors.Is(err, store.ErrNoSeat):
			s.log.Warn("seat claim refused", "addr", addrKey(clientAddr(r)))
			refuse(http.StatusNotFound, tr(lang)("join.badseat"), true)
			return
		case errors.Is(err, store.ErrStaffSeat):
			refuse(http.StatusForbidden, tr(lang)("join.staffseat"), true)
			return
		case err != nil:
			s.internalError(w, r, err)
			return
		}
		if cl.Learner != learnerID(r) {
			s.setLearnerCookie(w, r, cl.Learner)
		}
		s.log.Info("seat claimed", "class", cl.Seat.CohortID, "seat", cl.Seat.ID, "merged", cl.Merged)
		c.ID = cl.Seat.CohortID
	} else {
		c, err = s.cfg.Store.JoinCohort(ctx, learnerID(r), code)
		switch {
		case errors.Is(err, store.ErrNoCohort):
			refuse(http.StatusNotFound, tr(lang)("join.bad"), false)
			return
		case errors.Is(err, store.ErrRosterClass):
			refuse(http.StatusUnprocessableEntity, tr(lang)("join.needseat"), true)
			return
		case err != nil:
			s.internalError(w, r, err)
			return
		}
	}
	http.Redirect(w, r, "/join?joined="+url.QueryEscape(strconv.FormatInt(c.ID, 10)), http.StatusSeeOther)
}
