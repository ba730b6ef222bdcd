package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/rdmalab/rdmalab/lessons"
	"github.com/rdmalab/rdmalab/store"
	"github.com/rdmalab/rdmalab/web/page"
	"github.com/rdmalab/rdmalab/web/views"
)

// A program exercise's opt-in class leaderboard (issue 40; program.yaml
// `leaderboard: FIGURE`, lesson 06's write-rate ratio). A learner sees the
// board of their own classes only, and is on it only once they chose to
// (off by default; leaving deletes their entry). They appear as an
// anonymous label, "学员 7" / "Learner 7" (the board's 7th opt-in, a number
// that says nothing of who they are, never reused on that board), unless
// they choose to show their display name: /me promises that name to
// instructors only, and for a roster or LMS learner it is their real name,
// so showing it to classmates is their choice, made here. Each row's
// figures are the learner's best checked run made in the class, read from
// the stored run (store.Leaderboard): the form carries only the class and
// the choice, and anything else is refused. An instructor may hide a
// class's boards (instructor/classes.go): its learners then see only a
// sentence saying so, and joining is refused (leaving never is). The
// exercise links the board only for a learner in a class that shows it
// (programState.Leaderboard, static/js/program.js).
//
//	GET  /lessons/{slug}/programs/{id}/leaderboard[?class=ID]
//	POST /lessons/{slug}/programs/{id}/leaderboard   class=ID, choice=anon|name|leave

var boardStrings = page.Table{
	"zh": {
		"board.link":        "班级排行榜（自愿加入）",
		"board.title":       "班级排行榜：%s，练习 %d",
		"board.back":        "回到练习",
		"board.classes":     "你所在的班级",
		"board.noclass":     "排行榜按班级排名，你还没有加入任何班级。",
		"board.join":        "加入班级",
		"board.hidden":      "老师隐藏了这个班级的排行榜。",
		"board.lede.ratio":  "排名依据是检查报告的比值：在同一台虚拟机里，你的 WRITE 数与同时运行的 ib_write_bw 的 WRITE 数之比，取中位数，并给出其 95% 置信区间。每人取在本班期间检查过的运行中最好的一次，比值越高越好。这些数都是在这里测得的（模拟的虚拟机里的 Soft-RoCE），只适合在班里相互比较。",
		"board.optin":       "你不在排行榜上。加入是自愿的，随时可以退出。",
		"board.on":          "你在排行榜上，显示为：",
		"board.privacy":     "同班同学会看到你显示的名称、最好的比值及其区间、是否通过和运行时间；其他班级的人看不到。",
		"board.anon":        "用匿名标签（如「学员 7」），不透露你是谁",
		"board.name":        "用我的显示名：",
		"board.noname":      "你没有显示名，所以只能用匿名标签。",
		"board.submit":      "加入排行榜",
		"board.update":      "保存选择",
		"board.leave":       "退出排行榜（删除我的这一行）",
		"board.saved.join":  "已保存：你在排行榜上。",
		"board.saved.leave": "你已退出排行榜，你的那一行已删除。",
		"board.caption":     "班级「%s」的排行榜（每人最好的一次，比值越高越好）",
		"board.rank":        "名次",
		"board.who":         "学员",
		"board.value":       "比值（中位数）",
		"board.interval":    "95% 置信区间",
		"board.verdict":     "检查结果",
		"board.when":        "运行时间",
		"board.passed":      "通过",
		"board.failed":      "未通过",
		"board.empty":       "还没有人上榜：加入的学员有了一次测出比值的运行后，就会出现在这里。",
		"board.anonlabel":   "学员 %d",
		"board.you":         "（你）",
		"board.notyours":    "你不在这个班级里，看不到也不能加入它的排行榜。",
		"board.forged":      "表单里有不该有的字段：只能选择是否加入以及显示的名称。比值只来自你检查过的运行，不能提交。",
		"board.badchoice":   "无法识别的选择：请用页面上的按钮。",
		"board.needname":    "你没有显示名，不能用显示名上榜：请先在「我的名字」里设置，或者用匿名标签。",
		"board.unknown":     "这个练习没有排行榜。",
		"board.refused":     "排行榜：请求被拒绝",
	},
	"en": {
		"board.link":        "Class leaderboard (opt-in)",
		"board.title":       "Class leaderboard: %s, exercise %d",
		"board.back":        "Back to the exercise",
		"board.classes":     "Your classes",
		"board.noclass":     "Leaderboards rank the learners of a class, and you have not joined one.",
		"board.join":        "Join a class",
		"board.hidden":      "Your instructor hid this class's leaderboard.",
		"board.lede.ratio":  "The board ranks the ratio the check reports: your WRITEs per WRITE of ib_write_bw running beside them in the same machine, as a median with its 95% confidence interval. Each learner's best checked run made in this class counts; higher is better. Every figure was measured here (Soft-RoCE in an emulated machine): compare them within the class, never with hardware.",
		"board.optin":       "You are not on the board. Joining is your choice, and you can leave at any time.",
		"board.on":          "You are on the board as:",
		"board.privacy":     "Your classmates see the name you show, your best ratio and its interval, whether it passed, and when it ran; nobody outside the class does.",
		"board.anon":        "An anonymous label (such as “Learner 7”) that does not say who you are",
		"board.name":        "My display name:",
		"board.noname":      "You have no display name, so only the anonymous label is possible.",
		"board.submit":      "Join the leaderboard",
		"board.update":      "Save my choice",
		"board.leave":       "Leave the leaderboard (delete my row)",
		"board.saved.join":  "Saved: you are on the board.",
		"board.saved.leave": "You left the board; your row is deleted.",
		"board.caption":     "Leaderboard of class %s (each learner's best run; higher is better)",
		"board.rank":        "Rank",
		"board.who":         "Learner",
		"board.value":       "Ratio (median)",
		"board.interval":    "95% confidence interval",
		"board.verdict":     "Check",
		"board.when":        "Run at",
		"board.passed":      "passed",
		"board.failed":      "not passed",
		"board.empty":       "Nobody is on the board yet: a learner who joined appears here once a run of theirs has measured a ratio.",
		"board.anonlabel":   "Learner %d",
		"board.you":         " (you)",
		"board.notyours":    "You are not in this class: you cannot see or join its leaderboard.",
		"board.forged":      "The form holds a field it should not: you may only choose whether to join and the name shown. The ratio comes from your checked runs only and cannot be sent.",
		"board.badchoice":   "That choice is not one the page offers: use its buttons.",
		"board.needname":    "You have no display name to show: set one on “Your name” first, or use the anonymous label.",
		"board.unknown":     "This exercise has no leaderboard.",
		"board.refused":     "Leaderboard: request refused",
	},
}

// boardProgram finds the request's lesson and its program with a
// leaderboard, or answers 404.
func (s *Server) boardProgram(w http.ResponseWriter, r *http.Request) (*lessons.Lesson, *lessons.Program, int, bool) {
	l := s.course().Lesson(chi.URLParam(r, "slug"))
	if l != nil {
		for i, p := range l.Programs {
			if p.ID == chi.URLParam(r, "id") && p.Config.Leaderboard != "" {
				return l, p, i + 1, true
			}
		}
	}
	s.boardRefused(w, r, page.Errorf(page.CodeNotFound, tr(page.LangOf(r))("board.unknown")))
	return nil, nil, 0, false
}

// boardRefused shows why a leaderboard request was refused: e's message
// on an error page with its status.
func (s *Server) boardRefused(w http.ResponseWriter, r *http.Request, e *page.Error) {
	t := tr(page.LangOf(r))
	s.Render(w, r, e.Code.Status(), views.ErrorView(views.ErrorPage{
		Chrome: s.Chrome(r, t("board.refused")), Status: e.Code.Status(), Heading: t("board.refused"), Message: e.Message,
	}))
}

// boardClass is the learner's class the request names (?class= or the
// form's class), or their last open class when it names none; ok false
// (and 403 sent) when it names a class that is not theirs. classes are all
// of the learner's.
func (s *Server) boardClass(w http.ResponseWriter, r *http.Request, raw string, classes []store.Cohort) (store.Cohort, bool) {
	if raw == "" {
		if len(classes) == 0 {
			return store.Cohort{}, true
		}
		pick := classes[len(classes)-1]
		for _, c := range classes {
			if !c.Archived() {
				pick = c // the last open one: classes are in the order joined
			}
		}
		return pick, true
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	for _, c := range classes {
		if err == nil && c.ID == id {
			return c, true
		}
	}
	s.boardRefused(w, r, page.Errorf(page.CodeForbidden, tr(page.LangOf(r))("board.notyours")))
	return store.Cohort{}, false
}

// boardVisible reports whether learner is in a class whose leaderboards
// are not hidden: the exercise links its board only then.
func (s *Server) boardVisible(ctx context.Context, learner string) (bool, error) {
	classes, err := s.cfg.Store.LearnerCohorts(ctx, learner)
	if err != nil || len(classes) == 0 {
		return false, err
	}
	hidden, err := s.cfg.Store.HiddenLeaderboards(ctx)
	if err != nil {
		return false, err
	}
	for _, c := range classes {
		if !hidden[c.ID] {
			return true, nil
		}
	}
	return false, nil
}

func boardPath(l *lessons.Lesson, p *lessons.Program) string {
	return "/lessons/" + l.Slug + "/programs/" + p.ID + "/leaderboard"
}

// boardShow is GET …/leaderboard.
func (s *Server) boardShow(w http.ResponseWriter, r *http.Request) {
	l, p, n, ok := s.boardProgram(w, r)
	if !ok {
		return
	}
	s.renderBoard(w, r, l, p, n, r.URL.Query().Get("class"), r.URL.Query().Get("saved"))
}

func (s *Server) renderBoard(w http.ResponseWriter, r *http.Request, l *lessons.Lesson, p *lessons.Program, n int, rawClass, saved string) {
	ctx := r.Context()
	lang := page.LangOf(r)
	t := tr(lang)
	learner := learnerID(r)
	classes, err := s.cfg.Store.LearnerCohorts(ctx, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	c, ok := s.boardClass(w, r, rawClass, classes)
	if !ok {
		return
	}
	title := l.Slug
	if pg := l.Page(lang); pg != nil {
		title = pg.Title
	}
	heading := trf(lang, "board.title", title, n)
	v := views.Leaderboard{Chrome: s.Chrome(r, heading), Heading: heading,
		Back: "/lessons/" + l.Slug + "#program-" + p.ID, BackText: t("board.back"), Action: boardPath(l, p)}
	if len(classes) == 0 {
		v.NoClass = t("board.noclass")
		s.Render(w, r, http.StatusOK, views.LeaderboardView(v))
		return
	}
	for _, x := range classes {
		v.Classes = append(v.Classes, views.ClassPick{Label: x.Name, Href: boardPath(l, p) + "?class=" + strconv.FormatInt(x.ID, 10), Current: x.ID == c.ID})
	}
	hidden, err := s.cfg.Store.HiddenLeaderboards(ctx)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	if hidden[c.ID] {
		// Nothing of the board: who is on it, or whether the learner is.
		v.Hidden, v.HiddenText = true, t("board.hidden")
		s.Render(w, r, http.StatusForbidden, views.LeaderboardView(v))
		return
	}
	b := store.Board{Cohort: c.ID, Lesson: l.Slug, Program: p.ID, Figure: p.Config.Leaderboard}
	entry, on, err := s.cfg.Store.LeaderboardEntry(ctx, b, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	name, err := s.cfg.Store.DisplayName(ctx, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	rows, err := s.cfg.Store.Leaderboard(ctx, b)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	v.Lede = t("board.lede." + p.Config.Leaderboard)
	if !ui.Has(lang, "board.lede."+p.Config.Leaderboard) {
		v.Lede = ""
	}
	switch saved {
	case "join":
		v.Saved = t("board.saved.join")
	case "leave":
		v.Saved = t("board.saved.leave")
	}
	v.ClassID, v.OnBoard, v.DisplayName, v.ShowName = strconv.FormatInt(c.ID, 10), on, name, on && entry.ShowName && name != ""
	if on {
		v.Label = boardLabel(lang, entry.Number, entry.ShowName, name)
	}
	v.Caption, v.Empty = trf(lang, "board.caption", c.Name), t("board.empty")
	zone, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		zone = time.UTC
	}
	for _, x := range rows {
		row := views.LeaderboardRow{Rank: strconv.Itoa(x.Rank), Label: boardLabel(lang, x.Number, x.ShowName, x.Name),
			Value: figure2(x.Value), Interval: figure2(x.Low) + "–" + figure2(x.High), Verdict: t("board.failed"),
			At: x.At.In(zone).Format("2006-01-02 15:04"), AtISO: x.At.UTC().Format(time.RFC3339), You: x.Learner == learner}
		if x.Passed {
			row.Verdict = t("board.passed")
		}
		if row.You {
			row.Label += t("board.you")
		}
		v.Rows = append(v.Rows, row)
	}
	s.Render(w, r, http.StatusOK, views.LeaderboardView(v))
}

// boardLabel is how a learner shows on a board: their display name when
// they chose it (and have one), else their anonymous label.
func boardLabel(lang string, number int, showName bool, name string) string {
	if showName && name != "" {
		return name
	}
	return trf(lang, "board.anonlabel", number)
}

// figure2 is a check's figure as the check shows it: two decimals.
func figure2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// boardPost is POST …/leaderboard: join (choice anon or name), change the
// name shown, or leave (choice leave).
func (s *Server) boardPost(w http.ResponseWriter, r *http.Request) {
	l, p, _, ok := s.boardProgram(w, r)
	if !ok || !s.ParseForm(w, r) {
		return
	}
	ctx := r.Context()
	t := tr(page.LangOf(r))
	for k := range r.Form {
		if k != "class" && k != "choice" {
			s.boardRefused(w, r, page.Errorf(page.CodeBadRequest, t("board.forged")))
			return
		}
	}
	learner := learnerID(r)
	classes, err := s.cfg.Store.LearnerCohorts(ctx, learner)
	if err != nil {
		s.InternalError(w, r, err)
		return
	}
	raw := r.PostFormValue("class")
	if raw == "" {
		s.boardRefused(w, r, page.Errorf(page.CodeForbidden, t("board.notyours")))
		return
	}
	c, ok := s.boardClass(w, r, raw, classes)
	if !ok {
		return
	}
	b := store.Board{Cohort: c.ID, Lesson: l.Slug, Program: p.ID, Figure: p.Config.Leaderboard}
	back := boardPath(l, p) + "?class=" + url.QueryEscape(strconv.FormatInt(c.ID, 10))
	choice := r.PostFormValue("choice")
	switch choice {
	case "leave":
		if err := s.cfg.Store.LeaveLeaderboard(ctx, b, learner); err != nil {
			s.InternalError(w, r, err)
			return
		}
		http.Redirect(w, r, back+"&saved=leave", http.StatusSeeOther)
		return
	case "anon", "name":
	default:
		s.boardRefused(w, r, page.Errorf(page.CodeBadRequest, t("board.badchoice")))
		return
	}
	if hidden, err := s.cfg.Store.HiddenLeaderboards(ctx); err != nil {
		s.InternalError(w, r, err)
		return
	} else if hidden[c.ID] {
		s.boardRefused(w, r, page.Errorf(page.CodeForbidden, t("board.hidden")))
		return
	}
	if choice == "name" {
		name, err := s.cfg.Store.DisplayName(ctx, learner)
		if err != nil {
			s.InternalError(w, r, err)
			return
		}
		if name == "" {
			s.boardRefused(w, r, page.Errorf(page.CodeInvalid, t("board.needname")))
			return
		}
	}
	_, err = s.cfg.Store.JoinLeaderboard(ctx, b, learner, choice == "name")
	switch {
	case errors.Is(err, store.ErrLeaderboardHidden):
		s.boardRefused(w, r, page.Errorf(page.CodeForbidden, t("board.hidden")))
		return
	case errors.Is(err, store.ErrNotMember):
		s.boardRefused(w, r, page.Errorf(page.CodeForbidden, t("board.notyours")))
		return
	case err != nil:
		s.InternalError(w, r, err)
		return
	}
	http.Redirect(w, r, back+"&saved=join", http.StatusSeeOther)
}
