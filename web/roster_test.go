package web

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// uploadRoster posts a CSV file to the roster page as a browser's file
// input does (multipart).
func (e *instrEnv) uploadRoster(c *http.Client, path string, data []byte) *http.Response {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "roster.csv")
	fw.Write(data)
	mw.WriteField("csv", "")
	mw.Close()
	req, _ := http.NewRequest("POST", e.HTTP.URL+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func seatCodes(doc *goquery.Document) map[string]string {
	out := map[string]string{}
	doc.Find(`[data-testid=seat]`).Each(func(_ int, s *goquery.Selection) {
		out[s.Find(`[data-testid=seat-id]`).Text()] = s.Find(`[data-testid=seat-code]`).Text()
	})
	return out
}

// TestRosterClaim (issue 29 item 4): an instructor imports a roster (an
// uploaded file with a BOM and a header; a pasted CSV with mistakes listed
// by line, in zh); joining that class takes a personal code; a student
// claims a seat and their name is the roster's; the same codes on a second
// device sign in as the same learner with that device's answers merged;
// sign-out on a shared PC; a leaked code reset; a learner removed and two
// ids merged on the page.
func TestRosterClaim(t *testing.T) {
	e := newInstrEnv(t)
	ctx := context.Background()
	ada := e.instructor("ada", "correct horse battery")
	res := e.do(ada, "POST", "/instructor/classes", url.Values{"name": {"RDMA 2026"}})
	res.Body.Close()
	doc := e.page(e.do(ada, "GET", "/instructor/classes", nil), http.StatusOK)
	rosterPath, _ := doc.Find(`[data-testid=class-roster]`).Attr("href")
	classCode := doc.Find(`[data-testid=class-code]`).Text()
	if rosterPath == "" {
		t.Fatal("no roster link on the classes page")
	}

	res = e.uploadRoster(ada, rosterPath, []byte("\ufeffstudent_id,name\n2026001,张三\n2026002,Li Si\n"))
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload: %d", res.StatusCode)
	}
	doc = e.page(e.do(ada, "GET", res.Header.Get("Location")+"&lang=en", nil), http.StatusOK)
	if got := doc.Find(`[data-testid=roster-notice]`).Text(); got != "Imported: 2 added, 0 updated." {
		t.Errorf("notice %q", got)
	}
	// A pasted roster with mistakes, in zh: the good line goes in, each bad one is named.
	doc = e.page(e.do(ada, "POST", rosterPath+"?lang=zh", url.Values{"csv": {"2026003,王五\n2026004\n2026001,张三\n ,x"}}), http.StatusOK)
	var problems []string
	doc.Find(`[data-testid=roster-problem]`).Each(func(_ int, s *goquery.Selection) { problems = append(problems, s.Text()) })
	want := []string{"第 2 行：只有一列：需要「学号,姓名」两列。", "第 4 行：学号为空。"}
	if strings.Join(problems, "|") != strings.Join(want, "|") {
		t.Errorf("problems %q, want %q", problems, want)
	}
	codes := seatCodes(doc)
	if len(codes) != 3 || len(codes["2026001"]) != 8 || codes["2026001"] == codes["2026002"] {
		t.Fatalf("seat codes %v", codes)
	}

	// Joining a roster class with the class code alone is refused and
	// asks for the personal code.
	zhang := e.browser()
	e.answer(zhang, "alpha/single", `{"answer":"b"}`) // anonymous work before claiming
	doc = e.page(e.do(zhang, "POST", "/join?lang=en", url.Values{"code": {classCode}}), http.StatusUnprocessableEntity)
	if doc.Find(`input[name=seat][required]`).Length() != 1 {
		t.Error("no personal code field after a refused join")
	}
	e.page(e.do(zhang, "POST", "/join", url.Values{"code": {classCode}, "seat": {"WRONG234"}}), http.StatusNotFound)
	res = e.do(zhang, "POST", "/join", url.Values{"code": {classCode}, "seat": {codes["2026001"]}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("claim: %d", res.StatusCode)
	}
	doc = e.page(e.do(zhang, "GET", "/me?lang=zh", nil), http.StatusOK)
	if got := doc.Find(`[data-testid=me-seat]`).Text(); got != "2026001 张三 (RDMA 2026)" {
		t.Errorf("/me names %q", got)
	}
	if doc.Find(`input[name=name]`).Length() != 0 {
		t.Error("a seat holder is offered to change the roster name")
	}
	e.page(e.do(zhang, "POST", "/me", url.Values{"name": {"Li Si"}}), http.StatusConflict)

	// Zhang's phone answers anonymously, then claims with the same codes.
	phone := e.browser()
	e.answer(phone, "alpha/single", `{"answer":"a"}`)
	res = e.do(phone, "POST", "/join", url.Values{"code": {strings.ToLower(classCode)}, "seat": {codes["2026001"]}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("second device: %d", res.StatusCode)
	}
	seats, _ := e.DB.Seats(ctx, 1)
	st, err := e.DB.LearnerQuestionStatus(ctx, seats[0].Learner, []string{"alpha/single"})
	if err != nil || st["alpha/single"].Attempts != 2 {
		t.Errorf("Zhang's attempts after the second device: %+v %v", st, err)
	}
	doc = e.page(e.do(phone, "GET", "/me?lang=en", nil), http.StatusOK)
	if got := doc.Find(`[data-testid=me-seat]`).Text(); got != "2026001 张三 (RDMA 2026)" {
		t.Errorf("the phone is not Zhang: /me names %q", got)
	}
	// Sign out on the phone: a fresh anonymous learner, Zhang's seat intact.
	res = e.do(phone, "POST", "/me/signout", url.Values{})
	res.Body.Close()
	doc = e.page(e.do(phone, "GET", "/me?lang=en", nil), http.StatusOK)
	if doc.Find(`[data-testid=me-seat]`).Length() != 0 {
		t.Error("still signed in after signing out")
	}

	// The instructor's page: Zhang claimed on 2 devices; a new code; Li
	// joins; an anonymous second identity of Li is merged; Li removed.
	doc = e.page(e.do(ada, "GET", rosterPath+"?lang=en", nil), http.StatusOK)
	claimed := doc.Find(`[data-testid=seat]`).First().Find(`[data-testid=seat-claimed]`).Text()
	if !strings.Contains(claimed, "(UTC") || !strings.Contains(claimed, "devices: 2") {
		t.Errorf("claimed cell %q", claimed)
	}
	if doc.Find(`[data-testid=member]`).Length() != 1 {
		t.Errorf("%d members, want 1", doc.Find(`[data-testid=member]`).Length())
	}
	codeAction, _ := doc.Find(`[data-testid=seat]`).First().Find(`form`).First().Attr("action")
	res = e.do(ada, "POST", codeAction, url.Values{})
	res.Body.Close()
	other := e.browser()
	e.page(e.do(other, "POST", "/join", url.Values{"code": {classCode}, "seat": {codes["2026001"]}}), http.StatusNotFound)

	li := e.browser()
	res = e.do(li, "POST", "/join", url.Values{"code": {classCode}, "seat": {codes["2026002"]}})
	res.Body.Close()
	e.answer(li, "alpha/single", `{"answer":"c"}`)
	liSeat, _ := e.DB.Seats(ctx, 1)
	liID := liSeat[1].Learner
	// Li's second identity is an anonymous member that a merge folds in.
	strayID := "0123456789abcdef0123456789abcdef"
	if _, err := e.DB.AddAttempt(ctx, strayID, "alpha/single", []byte(`"a"`), true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, e.DB).Exec(`INSERT INTO cohort_members (cohort_id, learner, joined_at) VALUES (1, ?, '2026-01-01T00:00:00.000000000Z')`, strayID); err != nil {
		t.Fatal(err)
	}
	e.page(e.do(ada, "POST", rosterPath+"/merge", url.Values{"from": {strayID}, "into": {strayID}}), http.StatusUnprocessableEntity)
	res = e.do(ada, "POST", rosterPath+"/merge", url.Values{"from": {strayID}, "into": {liID}})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("merge: %d", res.StatusCode)
	}
	if st, _ := e.DB.LearnerQuestionStatus(ctx, liID, []string{"alpha/single"}); st["alpha/single"].Attempts != 2 {
		t.Errorf("Li's attempts after the merge: %+v", st)
	}
	res = e.do(ada, "POST", rosterPath+"/members/remove", url.Values{"learner": {liID}})
	res.Body.Close()
	doc = e.page(e.do(ada, "GET", rosterPath, nil), http.StatusOK)
	if doc.Find(`[data-testid=member]`).Length() != 1 {
		t.Errorf("Li still a member after removal")
	}
	if got := doc.Find(`[data-testid=seat]`).Eq(1).Find(`[data-testid=seat-code]`).Text(); got == codes["2026002"] {
		t.Error("a removed learner's seat kept its code")
	}
	// A learner is refused the roster page.
	e.page(e.do(li, "GET", rosterPath, nil), http.StatusForbidden)
}

// TestRosterCodesCSV: the roster page links the personal codes as a CSV
// download (BOM, formula guard) whose codes are the page's; a learner's
// browser cannot fetch it.
func TestRosterCodesCSV(t *testing.T) {
	e := newInstrEnv(t)
	ada := e.instructor("ada", "correct horse battery")
	res := e.do(ada, "POST", "/instructor/classes", url.Values{"name": {"RDMA 2026"}})
	res.Body.Close()
	doc := e.page(e.do(ada, "GET", "/instructor/classes", nil), http.StatusOK)
	rosterPath, _ := doc.Find(`[data-testid=class-roster]`).Attr("href")
	classCode := doc.Find(`[data-testid=class-code]`).Text()
	res = e.uploadRoster(ada, rosterPath, []byte("2026001,张三\n2026002,+Li Si\n"))
	res.Body.Close()
	doc = e.page(e.do(ada, "GET", rosterPath, nil), http.StatusOK)
	codes := seatCodes(doc)
	href, _ := doc.Find(`[data-testid=codes-csv]`).Attr("href")
	if href == "" {
		t.Fatal("no codes CSV link on the roster page")
	}
	res = e.do(ada, "GET", href, nil)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	body := string(b)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") || !strings.HasPrefix(body, "\ufeffstudent_id,name,class,join_code,personal_code,claimed_at\n") {
		t.Fatalf("codes.csv: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	for id, code := range codes {
		if !strings.Contains(body, id+",") || !strings.Contains(body, ","+classCode+","+code+",") {
			t.Errorf("codes.csv lacks %s's code %s:\n%s", id, code, body)
		}
	}
	if !strings.Contains(body, ",'+Li Si,") {
		t.Errorf("a name starting with + is not guarded:\n%s", body)
	}
	if res := e.do(e.browser(), "GET", href, nil); res.StatusCode == http.StatusOK {
		t.Errorf("a learner fetched the codes: %d", res.StatusCode)
	}
}
