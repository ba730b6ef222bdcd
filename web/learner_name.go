package web

import (
	"errors"
	"net/http"

	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// meStrings are the words of /me: a learner's display name, and signing
// out of a roster seat.
var meStrings = page.Table{
	"zh": {
		"me.title":        "我的名字",
		"me.lede":         "你可以留一个名字，只有教师能看到它（例如在班级概览中）。留空则保持匿名。",
		"me.name":         "显示名",
		"me.submit":       "保存",
		"me.saved":        "已保存。",
		"me.link":         "我的名字",
		"me.toolong":      "名字最多 %d 个字符，且不能包含控制字符或文字方向控制符。",
		"me.roster":       "你的名字来自班级花名册，不能在这里修改。如有错误，请联系老师。",
		"me.lms":          "你是从学校的学习平台进入实验室的，名字来自学习平台，不能在这里修改。如有错误，请在学习平台里更正，下次进入时会更新。",
		"me.seats":        "你已凭个人码登录为：",
		"me.signout":      "退出（在这台电脑上）",
		"me.signout.lede": "在公用电脑上用完后请退出。你的记录都保留，下次用同样的两个码即可继续。",
	},
	"en": {
		"me.title":        "Your name",
		"me.lede":         "You may leave a name; only instructors see it (in the class overview). Leave it empty to stay anonymous.",
		"me.name":         "Display name",
		"me.submit":       "Save",
		"me.saved":        "Saved.",
		"me.link":         "Your name",
		"me.toolong":      "The name may have at most %d characters and no control or text-direction characters.",
		"me.roster":       "Your name comes from the class roster and cannot be changed here. Ask your instructor if it is wrong.",
		"me.lms":          "You came in from your school's LMS, and your name is the LMS's: it cannot be changed here. Correct it in the LMS; your next launch brings it.",
		"me.seats":        "You are signed in with a personal code as:",
		"me.signout":      "Sign out on this computer",
		"me.signout.lede": "On a shared computer, sign out when you are done. Your work stays; the same two codes bring you back.",
	},
}

// The learner's display name: optional, shown to instructors only (the
// dashboard and the CSV exports), never to other learners.

// meShow is GET /me.
func (s *Server) meShow(w http.ResponseWriter, r *http.Request) {
	name, err := s.cfg.Store.DisplayName(r.Context(), learnerID(r))
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	s.renderMe(w, r, http.StatusOK, views.DisplayNameForm{Name: name, Saved: r.URL.Query().Has("saved")})
}

// meSignOut is POST /me/signout: the browser becomes a new anonymous
// learner (a shared lab PC after a student who claimed a roster seat; the
// seat and its work stay, and the codes sign in again).
func (s *Server) meSignOut(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	s.setLearnerCookie(w, r, store.NewLearnerID())
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// meUpdate is POST /me (form field "name"; empty clears it).
func (s *Server) meUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.ParseForm(w, r) {
		return
	}
	name := r.PostFormValue("name")
	err := s.cfg.Store.SetDisplayName(r.Context(), learnerID(r), name)
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		s.renderMe(w, r, http.StatusUnprocessableEntity, views.DisplayNameForm{
			Name: name, Error: trf(page.LangOf(r), "me.toolong", store.MaxDisplayName)})
		return
	}
	if errors.Is(err, store.ErrRosterName) {
		old, _ := s.cfg.Store.DisplayName(r.Context(), learnerID(r))
		s.renderMe(w, r, http.StatusConflict, views.DisplayNameForm{Name: old, Error: tr(page.LangOf(r))("me.roster")})
		return
	}
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	http.Redirect(w, r, "/me?saved=1", http.StatusSeeOther)
}

func (s *Server) renderMe(w http.ResponseWriter, r *http.Request, status int, v views.DisplayNameForm) {
	v.Chrome = s.Chrome(r, tr(page.LangOf(r))("me.title"))
	v.Action = "/me"
	seats, err := s.cfg.Store.LearnerSeats(r.Context(), learnerID(r))
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	for _, st := range seats {
		v.Seats = append(v.Seats, st.StudentID+" "+st.Name+" ("+st.ClassName+")")
	}
	if v.LMS, err = s.cfg.Store.IsLTILearner(r.Context(), learnerID(r)); err != nil {
		s.InternalError(w, r, err)
		return
	}
	if len(v.Seats) > 0 {
		v.SignOutAction = "/me/signout"
	}
	s.Render(w, r, status, views.DisplayNameView(v))
}
