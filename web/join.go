package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// Joining a class (a learner's action; instructors make classes in the
// instructor area, web/instructor/classes.go).

var joinStrings = page.Table{
	"zh": {
		"join.seat":          "个人码",
		"join.seat.optional": "个人码（老师给了你个人码时填写）",
		"join.needseat":      "这个班级有花名册：请同时输入老师给你的个人码。",
		"join.badseat":       "加入码或个人码不对，或者班级已归档。请核对老师给你的两个码。",
		"join.staffseat":     "这个浏览器登录过教师账号，不能认领学生座位。请用学生自己的浏览器。",
		"join.title":         "加入班级",
		"join.lede":          "输入老师给你的加入码。",
		"join.confirm":       "你将加入班级：",
		"join.submit":        "加入",
		"join.done":          "你已加入班级",
		"join.tocourse":      "去上课",
		"join.mine":          "你所在的班级：",
		"join.bad":           "这个加入码无效，或者班级已归档。请核对老师给你的加入码。",
		"join.privacy":       "加入后，老师能在班级概览中看到你的进度和作答（你仍然是匿名的，除非你在“我的名字”中留下名字）。",
	},
	"en": {
		"join.seat":          "Personal code",
		"join.seat.optional": "Personal code (if your instructor gave you one)",
		"join.needseat":      "This class has a roster: type the personal code your instructor gave you too.",
		"join.badseat":       "The join code or the personal code is wrong, or the class is archived. Check both codes your instructor gave you.",
		"join.staffseat":     "This browser was used for an instructor account and cannot claim a student's seat. Use the student's own browser.",
		"join.title":         "Join a class",
		"join.lede":          "Type the join code your instructor gave you.",
		"join.confirm":       "You are joining the class:",
		"join.submit":        "Join",
		"join.done":          "You joined the class",
		"join.tocourse":      "Go to the course",
		"join.mine":          "Your classes:",
		"join.bad":           "This join code is wrong, or the class is archived. Check the code your instructor gave you.",
		"join.privacy":       "Once you join, your instructors see your progress and answers on their dashboard (you stay anonymous unless you set a name on \"My name\").",
	},
}

// joinShow is GET /join and GET /join/{code}: the learner types a code or
// confirms the class a link names. A visit changes nothing.
func (s *Server) joinShow(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lang := page.LangOf(r)
	v := views.Join{Chrome: s.Chrome(r, tr(lang)("join.title"))}
	status := http.StatusOK
	mine, err := s.cfg.Store.LearnerCohorts(ctx, learnerID(r))
	if err != nil {
		s.InternalError(w, r, err)
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
			s.InternalError(w, r, err)
			return
		default:
			v.Code, v.ClassName = c.Code, c.Name
			if v.NeedSeat, err = s.cfg.Store.CohortHasRoster(ctx, c.ID); err != nil {
				s.InternalError(w, r, err)
				return
			}
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	s.Render(w, r, status, views.JoinView(v))
}

// joinPost is POST /join (fields code and, for a class with a roster,
// seat: the learner's personal code). Claiming a seat may switch the
// browser to the seat's learner id (web/instructor/roster.go, store.ClaimSeat): the
// cookie is set to it here.
func (s *Server) joinPost(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	ctx := r.Context()
	lang := page.LangOf(r)
	code, seat := r.PostFormValue("code"), r.PostFormValue("seat")
	refuse := func(status int, msg string, needSeat bool) {
		w.Header().Set("Cache-Control", "no-store")
		s.Render(w, r, status, views.JoinView(views.Join{Chrome: s.Chrome(r, tr(lang)("join.title")),
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
			s.log.Warn("seat claim refused", "addr", page.AddrKey(page.ClientAddr(r)))
			refuse(http.StatusNotFound, tr(lang)("join.badseat"), true)
			return
		case errors.Is(err, store.ErrStaffSeat):
			refuse(http.StatusForbidden, tr(lang)("join.staffseat"), true)
			return
		case err != nil:
			s.InternalError(w, r, err)
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
			s.InternalError(w, r, err)
			return
		}
	}
	http.Redirect(w, r, "/join?joined="+url.QueryEscape(strconv.FormatInt(c.ID, 10)), http.StatusSeeOther)
}
