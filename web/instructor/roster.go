package instructor

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/internal/roster"
	"github.com/rdmalab/rdmalab/lti"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Rosters (issue 29 item 4): an instructor imports a class's roster (CSV of
// student ids and names) at /instructor/classes/{id}/roster and hands out
// each student's personal code; a learner claims their seat on /join with
// the class code plus that code (classes.go). The page also removes a
// learner from the class and merges two learner ids.

// localTime shows t in the server's time zone with its UTC offset, so an
// instructor anywhere reads it right ("" when zero).
func localTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04 (UTC-07:00)")
}

// MaxRosterFile bounds a roster file: the page's upload and `labserver
// roster import` read at most this much.
const MaxRosterFile = page.MaxBody

// rosterCohort reads {id} of a roster route (404 when unknown).
func (s *Area) rosterCohort(w http.ResponseWriter, r *http.Request) (store.Cohort, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		s.NotFound(w, r)
		return store.Cohort{}, false
	}
	c, err := s.cfg.Store.Cohort(r.Context(), id)
	if errors.Is(err, store.ErrNoCohort) {
		s.NotFound(w, r)
		return store.Cohort{}, false
	}
	if err != nil {
		s.InternalError(w, r, err)
		return store.Cohort{}, false
	}
	return c, true
}

func rosterHref(c store.Cohort) string {
	return "/instructor/classes/" + strconv.FormatInt(c.ID, 10) + "/roster"
}

// rosterShow is GET /instructor/classes/{id}/roster.
func (s *Area) rosterShow(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.taScope(w, r, c.ID) {
		return
	}
	in, _ := currentInstructor(r)
	v := views.Roster{ReadOnly: in.TA()}
	q := r.URL.Query()
	if q.Has("added") {
		v.Notice = s.trf(page.LangOf(r), "roster.imported", atoiQ(q.Get("added")), atoiQ(q.Get("updated")))
	}
	if q.Has("merged") {
		v.Notice = s.tr(page.LangOf(r))("roster.merged")
	}
	s.renderRoster(w, r, c, http.StatusOK, v)
}

func atoiQ(s string) int {
	n, _ := strconv.Atoi(s)
	return max(n, 0)
}

func (s *Area) renderRoster(w http.ResponseWriter, r *http.Request, c store.Cohort, status int, v views.Roster) {
	ctx := r.Context()
	lang := page.LangOf(r)
	t := s.tr(lang)
	seats, err := s.cfg.Store.Seats(ctx, c.ID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	members, err := s.cfg.Store.CohortMembers(ctx, c.ID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	v.Chrome = s.Chrome(r, t("roster.title")+" · "+c.Name)
	v.ClassName, v.ClassCode, v.Archived = c.Name, c.Code, c.Archived()
	v.JoinURL = page.BaseURL(r) + "/join/" + c.Code
	base := rosterHref(c)
	v.Action, v.MergeAction, v.RemoveMemberAction = base, base+"/merge", base+"/members/remove"
	v.CodesCSV = base + "/codes.csv"
	v.Dashboard = "/instructor?class=" + strconv.FormatInt(c.ID, 10)
	for _, st := range seats {
		id := strconv.FormatInt(st.ID, 10)
		row := views.SeatRow{StudentID: st.StudentID, Name: st.Name, Code: st.Code,
			CodeAction: base + "/" + id + "/code", RemoveAction: base + "/" + id + "/remove"}
		if st.Claimed() {
			row.Claimed = localTime(st.ClaimedAt)
			row.Devices = st.Claims
		}
		v.Seats = append(v.Seats, row)
	}
	for _, m := range members {
		name := m.Name
		if name == "" {
			name = t("roster.anon") + " " + m.Learner[:8]
		}
		v.Members = append(v.Members, views.MemberRow{Learner: m.Learner, Name: name, Joined: localTime(m.JoinedAt), Seat: m.Seat})
	}
	if err := s.lmsRoster(r, c, &v); err != nil {
		s.InternalError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.RosterView(v))
}

// lmsRoster fills the LMS course's roster of class c into v (nothing for
// a class that is no LMS course).
func (s *Area) lmsRoster(r *http.Request, c store.Cohort, v *views.Roster) error {
	ctx := r.Context()
	lang := page.LangOf(r)
	lms, err := s.cfg.Store.IsLTIClass(ctx, c.ID)
	if err != nil || !lms {
		return err
	}
	v.LMS = true
	src, ok, err := s.cfg.Store.LTIRosterSourceOf(ctx, c.ID)
	if err != nil {
		return err
	}
	if !ok {
		v.LMSSynced = s.tr(lang)("lmsr.nosvc")
		return nil
	}
	if s.cfg.LTI != nil && !v.ReadOnly {
		v.LMSSyncAction = rosterHref(c) + "/lti-sync"
	}
	if src.SyncedAt.IsZero() {
		v.LMSSynced = s.tr(lang)("lmsr.never")
		return nil
	}
	rows, err := s.cfg.Store.LTIRoster(ctx, c.ID, src)
	if err != nil {
		return err
	}
	v.LMSSynced = s.trf(lang, "lmsr.synced", localTime(src.SyncedAt), len(rows))
	for _, m := range rows {
		v.LMSRoster = append(v.LMSRoster, views.LMSRosterRow{Name: m.Name, UserID: m.Sub, Email: m.Email, Role: m.Role, Status: m.Status})
	}
	return nil
}

// rosterLTISync is POST /instructor/classes/{id}/roster/lti-sync: read
// the LMS course's roster (NRPS) and keep it.
func (s *Area) rosterLTISync(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	ctx := r.Context()
	src, ok, err := s.cfg.Store.LTIRosterSourceOf(ctx, c.ID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	if !ok || s.cfg.LTI == nil {
		s.NotFound(w, r)
		return
	}
	p, err := s.cfg.Store.PlatformByID(ctx, src.PlatformID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	members, err := s.cfg.LTI.Members(ctx, p, src.MembershipsURL)
	if err != nil {
		s.log.Warn("lti roster", "class", c.ID, "err", err)
		s.renderRoster(w, r, c, http.StatusBadGateway, views.Roster{Problems: []string{s.trf(page.LangOf(r), "lmsr.failed", err.Error())}})
		return
	}
	var rows []store.LTIRosterMember
	for _, m := range members {
		if m.UserID == "" {
			continue
		}
		role := "learner"
		switch m.Role() {
		case lti.RoleIsInstructor:
			role = "instructor"
		case lti.RoleIsTA:
			role = "ta"
		}
		rows = append(rows, store.LTIRosterMember{Sub: m.UserID, Name: m.Name, Email: m.Email, Role: role, Active: m.Active()})
	}
	if err := s.cfg.Store.SyncLTIRoster(ctx, src, rows); err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("lti roster read", "by", in.Username, "class", c.ID, "members", len(rows))
	http.Redirect(w, r, rosterHref(c), http.StatusSeeOther)
}

// rosterImport is POST /instructor/classes/{id}/roster: a CSV pasted
// (field csv) or uploaded (field file). Lines with problems are listed by
// number and the rest imported; nothing is imported when the file as a
// whole is unreadable.
func (s *Area) rosterImport(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok {
		return
	}
	if err := r.ParseMultipartForm(page.MaxBody); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		s.ErrorPage(w, r, http.StatusBadRequest)
		return
	} else if errors.Is(err, http.ErrNotMultipart) && !s.ParseForm(w, r) {
		return
	}
	data := []byte(r.PostFormValue("csv"))
	if f, _, err := r.FormFile("file"); err == nil {
		b, err := io.ReadAll(io.LimitReader(f, MaxRosterFile))
		f.Close()
		if err != nil {
			s.ErrorPage(w, r, http.StatusBadRequest)
			return
		}
		if len(b) > 0 {
			data = b
		}
	}
	lang := page.LangOf(r)
	good, problems := ParseRoster(data)
	v := views.Roster{Problems: RosterProblems(s.tr(lang), problems)}
	if len(good) == 0 {
		if len(v.Problems) == 0 {
			v.Problems = append(v.Problems, s.tr(lang)("roster.empty"))
		}
		s.renderRoster(w, r, c, http.StatusUnprocessableEntity, v)
		return
	}
	added, updated, err := s.cfg.Store.ImportRoster(r.Context(), c.ID, good)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		v.Problems = append(v.Problems, s.trf(lang, "roster.toomany", store.MaxRosterSeats))
		s.renderRoster(w, r, c, http.StatusUnprocessableEntity, v)
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("roster imported", "by", in.Username, "class", c.ID, "added", added, "updated", updated, "skipped", len(v.Problems))
	if len(v.Problems) > 0 {
		// Shown on this response: the skipped lines must not vanish behind a redirect.
		v.Notice = s.trf(lang, "roster.imported", added, updated)
		s.renderRoster(w, r, c, http.StatusOK, v)
		return
	}
	http.Redirect(w, r, rosterHref(c)+"?added="+strconv.Itoa(added)+"&updated="+strconv.Itoa(updated), http.StatusSeeOther)
}

// ParseRoster reads a roster CSV as the web import and `labserver roster
// import` both do: roster.Parse, then each entry checked as the store
// will (store.CheckRosterEntry); an entry that fails is a problem of kind
// "invalid" on its line.
func ParseRoster(data []byte) ([]store.RosterEntry, []roster.Problem) {
	entries, problems := roster.Parse(data)
	var good []store.RosterEntry
	for _, e := range entries {
		se := store.RosterEntry{StudentID: e.StudentID, Name: e.Name}
		if err := store.CheckRosterEntry(se); err != nil {
			problems = append(problems, roster.Problem{Line: e.Line, Kind: roster.Invalid})
			continue
		}
		good = append(good, se)
	}
	slices.SortStableFunc(problems, func(a, b roster.Problem) int { return a.Line - b.Line })
	return good, problems
}

// RosterProblems says ParseRoster's problems with t (a language's
// translator of the server's strings), one line each ("line 3: …").
func RosterProblems(t views.Tr, problems []roster.Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, rosterProblem(t, p.Line, string(p.Kind)))
	}
	return out
}

// RosterCodesCSV is the class's personal codes as a CSV file (BOM,
// formula guard: csvFile), one row per seat, for the instructor to hand
// out: the web download and `labserver roster codes` write these bytes.
func RosterCodesCSV(c store.Cohort, seats []store.Seat) []byte {
	rows := [][]string{{"student_id", "name", "class", "join_code", "personal_code", "claimed_at"}}
	for _, st := range seats {
		rows = append(rows, []string{csvText(st.StudentID), csvText(st.Name), csvText(c.Name), c.Code, st.Code, page.TimeRFC3339(st.ClaimedAt)})
	}
	b, _ := csvFile(rows) // writing to memory fails only on invalid UTF-8 quoting, which csv does not refuse
	return b
}

// rosterCodes is GET /instructor/classes/{id}/roster/codes.csv.
func (s *Area) rosterCodes(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.taScope(w, r, c.ID) {
		return
	}
	seats, err := s.cfg.Store.Seats(r.Context(), c.ID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	sendCSV(w, "codes-"+c.Code+".csv", RosterCodesCSV(c, seats))
}

// rosterProblem says what is wrong with a roster line, with t.
func rosterProblem(t views.Tr, line int, kind string) string {
	msg := t("roster.problem." + kind)
	if kind == "invalid" {
		msg = fmt.Sprintf(t("roster.problem.invalid"), store.MaxStudentID, store.MaxDisplayName)
	}
	if line == 0 {
		return msg
	}
	return fmt.Sprintf(t("roster.line"), line) + msg
}

// rosterSeatAction handles POST …/roster/{seat}/code and …/{seat}/remove.
func (s *Area) rosterSeatAction(remove bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.rosterCohort(w, r)
		if !ok || !s.ParseForm(w, r) {
			return
		}
		seat, err := strconv.ParseInt(chi.URLParam(r, "seat"), 10, 64)
		if err != nil {
			s.NotFound(w, r)
			return
		}
		if remove {
			err = s.cfg.Store.RemoveSeat(r.Context(), c.ID, seat)
		} else {
			err = s.cfg.Store.NewSeatCode(r.Context(), c.ID, seat)
		}
		s.rosterDone(w, r, c, err)
	}
}

// rosterDone answers a roster change: back to the roster page, 404 for a
// seat or member the class does not have.
func (s *Area) rosterDone(w http.ResponseWriter, r *http.Request, c store.Cohort, err error) {
	switch {
	case errors.Is(err, store.ErrNoSeat):
		s.NotFound(w, r)
	case err != nil:
		s.InternalError(w, r, err)
	default:
		http.Redirect(w, r, rosterHref(c), http.StatusSeeOther)
	}
}

// rosterRemoveMember is POST …/members/remove (field learner).
func (s *Area) rosterRemoveMember(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	s.rosterDone(w, r, c, s.cfg.Store.RemoveMember(r.Context(), c.ID, r.PostFormValue("learner")))
}

// rosterMerge is POST …/merge (fields from, into: learner ids of the
// class): one student who used two ids becomes one learner.
func (s *Area) rosterMerge(w http.ResponseWriter, r *http.Request) {
	c, ok := s.rosterCohort(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	from, into := r.PostFormValue("from"), r.PostFormValue("into")
	lang := page.LangOf(r)
	members, err := s.cfg.Store.CohortMembers(r.Context(), c.ID)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	inClass := map[string]bool{}
	for _, m := range members {
		inClass[m.Learner] = true
	}
	// Only learners of this class: the page must not become a way to
	// reach any learner id of the lab.
	if !inClass[from] || !inClass[into] || from == into {
		s.renderRoster(w, r, c, http.StatusUnprocessableEntity, views.Roster{Problems: []string{s.tr(lang)("roster.merge.pick")}})
		return
	}
	err = s.cfg.Store.MergeLearners(r.Context(), from, into)
	if errors.Is(err, store.ErrTwoSeats) {
		s.renderRoster(w, r, c, http.StatusUnprocessableEntity, views.Roster{Problems: []string{s.tr(lang)("roster.merge.twoseats")}})
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	in, _ := currentInstructor(r)
	s.log.Info("learners merged", "by", in.Username, "class", c.ID, "from", from, "into", into)
	http.Redirect(w, r, rosterHref(c)+"?merged=1", http.StatusSeeOther)
}
