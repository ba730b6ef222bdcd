package views

// LTIPick is the deep-linking picker (/lti/deep-link/{token}): an LMS
// instructor chooses a lesson or one question to place in their course.
type LTIPick struct {
	Chrome
	Action      string // the form's POST URL
	Lessons     []LTILessonChoice
	CanGrade    bool   // the platform accepts a line item with the link
	Platform    string // the LMS's issuer, shown so the instructor knows where it goes
	ContextName string // the LMS course's title
}

// LTILessonChoice is a lesson with its questions.
type LTILessonChoice struct {
	Value     string // "lesson:SLUG"
	Title     string
	Questions []Option // Value "question:SLUG:ID", Label the prompt's start
}

// LTIPost is the page that posts the signed deep-linking response back
// to the LMS (by itself with JavaScript, with a button without).
type LTIPost struct {
	Chrome
	Action string // deep_link_return_url
	JWT    string
	Chosen string // what was placed, for the learner-visible line
}

// LTIAdmin is /instructor/lti: the tool's URLs to type into an LMS, the
// registered platforms, and scores not delivered yet.
type LTIAdmin struct {
	Chrome
	Off        bool // serve has no LTI tool (no key): only the explanation
	TA         bool // a TA reads; the forms are hidden
	Error      string
	Notice     string
	ToolURLs   []Option // Label the field an LMS asks for, Value the URL
	Platforms  []LTIPlatformRow
	Outbox     []LTIOutboxRow
	OutboxMore bool
}

// LTIPlatformRow is one registered platform.
type LTIPlatformRow struct {
	ID           string
	Issuer       string
	ClientID     string
	Deployments  string
	AuthURL      string
	TokenURL     string
	JWKSURL      string
	RemoveAction string
}

// LTIOutboxRow is one score not delivered yet.
type LTIOutboxRow struct {
	Issuer    string
	Learner   string
	LineItem  string
	Score     string
	Attempts  string
	LastError string
	Next      string
}
