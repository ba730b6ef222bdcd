package views

import (
	"strconv"
)

// View models of the instructor pages (instructor.templ) and the learner's
// display-name page. Handlers in web/instructor_*.go fill them.

// InstructorLogin is the login form. It is also the body of the 403 answer
// to a learner who opens an instructor URL: no class data, just the form.
type InstructorLogin struct {
	Chrome
	Action   string // form action
	Next     string // where to go after logging in
	Username string
	Error    string // wrong credentials, rate limit
	Notice   string // logged out, session expired, instructors only
	Setup    bool   // no instructor exists yet: say how to get the setup link
}

// InstructorSetup is the form of an account link: the setup link printed
// at the first start, or an invitation an instructor made.
type InstructorSetup struct {
	Chrome
	Kind        string // "setup" (the first-start link) or "invite": the page's test ids
	Heading     string
	Action      string
	Token       string
	Username    string
	Error       string
	Invalid     bool   // the link is used, expired or wrong
	InvalidText string // what the page says then
	Lede        string // the invitation's own lede (a TA's); "" for DefaultLede
	DefaultLede string
}

// DisplayNameForm is the learner's /me page.
type DisplayNameForm struct {
	Chrome
	Action string
	Name   string
	Saved  bool
	Error  string
	// Seats: "student id, name (class)" of each roster seat this browser
	// holds; the name is the roster's then, and signing out is offered.
	Seats         []string
	SignOutAction string
	// LMS: the learner came from an LMS, whose name it is; shown, not
	// offered for editing (the store refuses to change it).
	LMS bool
}

// Dashboard is the instructor's class overview.
type Dashboard struct {
	Chrome
	Instructor    string
	TA            bool // a TA's dashboard: no drafts
	LogoutAction  string
	CourseErrors  []string      // file:line: message of the last failed reload
	Warnings      []string      // file:line: message of the course's warnings (check's, not fatal)
	MoreWarnings  int           // warnings beyond those listed
	ActiveWindow  string        // e.g. "15 min"
	Active        int           // active learners, over all pages
	Total         int           // learners, over all pages
	Learners      []DashLearner // this page
	Pager         Pager
	Lessons       []DashLesson
	Experiments   []DashExperiment
	Exports       []Link
	Classes       []ClassPick // the class filter (empty when no class exists)
	ClassName     string      // the class shown, "" for all learners
	GradebookHref string      // the gradebook of the same learners
	// Graded: a class's lessons in graded mode, each with its dates,
	// limit and what counts; GradedHref its settings ("" for all learners).
	Graded     []Link
	GradedHref string
}

// Pager links the previous and next page of a paged table ("" when there
// is none) and says which rows are shown.
type Pager struct {
	Label      string // e.g. "learners 51–100 of 100,000"
	Prev, Next string
}

// DashLearner is one row of the learners table.
type DashLearner struct {
	Name       string // display name, or "" (the table shows Short)
	Short      string // first characters of the anonymous id
	LastActive string
	Active     bool
	Opened     int
	Completed  int
	Attempts   int
	Correct    int
	Runs       int
	TasksDone  int // lessons' :::task steps verified done
	ProgramsOK int // lessons' :::program exercises passed
}

// DashLesson is one lesson with its class progress and question statistics.
type DashLesson struct {
	Slug      string
	Title     string
	Href      string
	Opened    int
	Completed int
	Learners  int // denominator of the bars: all learners
	Questions []DashQuestion
	Programs  []DashProgram // the lesson's :::program exercises, in page order
}

// DashProgram is one :::program exercise's class record: how many learners
// ran it to its check, passed it, and were shown its solution, and how
// many runs reached the check in all.
type DashProgram struct {
	ID                            string
	Tried, Passed, Solution, Runs int
}

// DashQuestion is one question's statistics.
type DashQuestion struct {
	ID        string
	Type      string
	Prompt    string
	Learners  int
	Attempts  int
	Facility  string // "67%" or "–" when nobody answered
	FacPct    int
	Options   []DashOption
	Values    []DashValue
	WrongPick string // most-picked wrong option id (single/multi)
	Reveals   int    // learners who chose "show answer"
	FormatErr int    // numeric answers in a form the server could not read
}

// DashOption is how often one option was chosen (for order questions: put
// at a wrong place). Removed marks choices of an option the author has since
// deleted: old attempts stay counted and readable.
type DashOption struct {
	ID          string
	Text        string
	Correct     bool
	Chosen      int
	FirstChosen int
	Pct         int // of attempts
	Removed     bool
}

// DashValue is one numeric answer and its count.
type DashValue struct {
	Value   string
	Correct bool
	Count   int
}

// DashExperiment is how the runs of one experiment ended.
type DashExperiment struct {
	ID       string
	Title    string
	Total    int
	Learners int
	Statuses []DashStatus
}

// DashStatus is the number of runs that ended in one state.
type DashStatus struct {
	Status string
	Label  string
	Count  int
}

// barWidth is the class that sets a bar's width for n out of of, in steps
// of 5 % (instructor.css defines w0…w100): a class, not an inline style,
// so the Content-Security-Policy needs no 'unsafe-inline' for styles.
func barWidth(n, of int) string {
	pct := 0
	if of > 0 {
		pct = min(100, max(0, n*100/of))
	}
	return "w" + strconv.Itoa((pct+2)/5*5)
}

// Account is the instructor's account page.
type Account struct {
	Chrome
	Me          string
	Instructors []Option // Value the username, Label the role of a TA ("" for an instructor)
	TA          bool     // a TA's account page: their password only
	PwSaved     bool
	PwError     string
}

// Cohorts is the instructor's classes page.
type Cohorts struct {
	Chrome
	Classes          []CohortRow
	Error            string
	ShowArchivedHref string // "" when archived classes are shown or none exist
	TA               bool   // a TA's view: their classes, nothing to change
}

// CohortRow is one class.
type CohortRow struct {
	ID            string
	Name          string
	Code          string
	JoinURL       string
	Href          string // the dashboard filtered to this class
	Members       int
	Archived      bool
	ArchiveAction string
	RosterHref    string
	GradedHref    string
	TAs           []Option // the class's TA accounts
	AddTAs        []Option // TA accounts not yet in the class
	LMS           bool     // an LMS course's class: no join code works, none is shown
	TAAction      string
	// BoardHidden: the class's program leaderboards are hidden from its
	// learners (web/leaderboard.go); BoardAction toggles it.
	BoardHidden bool
	BoardAction string
}

// Invitations is the instructor's invitations page.
type Invitations struct {
	Chrome
	Link, LinkExpires, LinkRole string // the link just made (while pending)
	Gone                        bool   // the link asked for is used, revoked or expired
	Revoked                     bool
	Pending                     []InviteRow
	Classes                     []Option // for a TA's invitation
}

// InviteRow is one pending invitation.
type InviteRow struct {
	By, Role, Created, Expires, RevokeAction string
}

// Join is the learner's page for joining a class.
type Join struct {
	Chrome
	Code      string
	ClassName string // the class a join link names (confirm with one click)
	Joined    string // name of the class just joined
	Mine      string // the classes the learner is in, comma-separated
	Error     string
	NeedSeat  bool // the class has a roster: ask for the personal code
}

// Roster is a class's roster page.
type Roster struct {
	Chrome
	ClassName, ClassCode, JoinURL string
	Archived                      bool
	Dashboard                     string
	Action                        string // import
	CodesCSV                      string // the personal codes as CSV
	MergeAction                   string
	RemoveMemberAction            string
	Notice                        string
	Problems                      []string
	Seats                         []SeatRow
	Members                       []MemberRow
	ReadOnly                      bool // a TA's view
	// LMS: the class is an LMS course's (no join code works). LMSRoster is
	// its roster as the LMS last said it (NRPS), against the lab's
	// members; LMSSyncAction reads it again ("" when the LMS offers no
	// roster service, or for a TA); LMSSynced says when it was read.
	LMS           bool
	LMSRoster     []LMSRosterRow
	LMSSyncAction string
	LMSSynced     string
}

// LMSRosterRow is one person of an LMS course: Status is "launched",
// "never" (enrolled, never came to the lab) or "dropped" (in the lab, no
// longer enrolled).
type LMSRosterRow struct {
	Name, UserID, Email, Role, Status string
}

// SeatRow is one roster entry.
type SeatRow struct {
	StudentID, Name, Code    string
	Claimed                  string // when, with its zone; "" while free
	Devices                  int
	CodeAction, RemoveAction string
}

// MemberRow is one learner of the class.
type MemberRow struct {
	Learner, Name, Joined string
	Seat                  bool
}

// ClassPick is one entry of the dashboard's class filter.
type ClassPick struct {
	Label   string
	Href    string
	Current bool
}

// Gradebook is learner × lesson, plus the hardest questions.
type Gradebook struct {
	Chrome
	ClassName  string
	CSV        string
	Lessons    []Link
	Modes      []string // per lesson, a class's view: practice, or graded with its dates
	GradedHref string   // the class's graded-mode settings ("" for all learners)
	Rows       []GradeRow
	Pager      Pager
	Hardest    []HardQuestion
}

// GradeRow is one learner of the gradebook.
type GradeRow struct {
	Name, Short string
	Cells       []GradeCell
}

// GradeCell is one learner's record on one lesson.
type GradeCell struct {
	Score     string // "2/3"
	Full      bool   // every question right
	Completed bool
	Attempts  int
	Runs      int
	Tasks     string // ":::task steps done/in the lesson" ("1/2"); "" when the lesson has none
	Programs  string // ":::program exercises passed of the lesson's, runs, hints, solutions", in words; "" when none
	// ProgramsHref is the learner's page of the lesson's exercises, with
	// the code last submitted ("" when the lesson has none).
	ProgramsHref string
	Seen         int // questions whose answer the learner saw before answering right (no credit)
}

// HardQuestion is one row of the course's questions by facility.
type HardQuestion struct {
	ID, Lesson, Prompt, Facility string
	Learners, Attempts           int
}

// Count is "n things" with the plural form of lang: key names the plural
// text, key+".one" the singular (zh has one form for both).
func Count(t Tr, n int, key string) string {
	if n == 1 {
		return "1 " + t(key+".one")
	}
	return strconv.Itoa(n) + " " + t(key)
}

// AnswerKey is the instructor's printable answer key. Prompt, Text,
// Feedback, Explanation and Hint hold HTML rendered from the course's own
// Markdown (trusted content, like lesson pages).
type AnswerKey struct {
	Chrome
	Lessons       []KeyLesson
	Nav           []ClassPick // all lessons, then each lesson with questions
	QuestionsOnly bool        // the question sheet: no answers, feedback, hints, explanations
	ToggleHref    string      // the same page with answers / as a question sheet
	ClassName     string      // the class whose results each question shows ("" for none)
}

// KeyLesson is one lesson's questions.
type KeyLesson struct {
	Slug, Title string
	Questions   []KeyQuestion
}

// KeyQuestion is one question with its answer.
type KeyQuestion struct {
	ID, Type, TypeLabel string
	Prompt              string
	Options             []KeyOption
	Numeric             string // "12.5 ± 0.1 GB/s"
	Explanation, Hint   string
	ClassStats          string // how the class did ("" without a class)
}

// KeyOption is one option; Position is its place in an order question's answer.
type KeyOption struct {
	ID, Text, Feedback string
	Correct            bool
	Position           int
	ClassCount         string // the class's first choices of it ("" without a class)
}
