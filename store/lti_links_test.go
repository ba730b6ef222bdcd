package store

import (
	"context"
	"testing"

	"github.com/rdmalab/rdmalab/lti"
)

// A learner with no LTI grade link is remembered (a quiz answer then
// costs no query), and a launch that adds a link, or a merge that moves
// one to them, makes it show at once.
func TestLTIGradeLinksRemembered(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	pid, err := db.AddLTIPlatform(ctx, lti.Platform{Issuer: "https://lms.example", ClientID: "c1",
		AuthURL: "https://lms.example/auth", TokenURL: "https://lms.example/token", JWKSURL: "https://lms.example/jwks",
		Deployments: []string{"d1"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := db.RecordLTILaunch(ctx, LTILaunch{PlatformID: pid, Sub: "s1", Role: "learner"})
	if err != nil {
		t.Fatal(err)
	}
	if links, err := db.LTIGradeLinks(ctx, first.Learner); err != nil || len(links) != 0 {
		t.Fatalf("before a graded launch: %v %v", links, err)
	}
	if _, none := db.noLTI.get(first.Learner); !none {
		t.Fatal("a learner without links is not remembered")
	}
	if _, err := db.RecordLTILaunch(ctx, LTILaunch{PlatformID: pid, Sub: "s1", Role: "learner",
		LineItem: "https://lms.example/li/1", Lesson: "01-why-rdma"}); err != nil {
		t.Fatal(err)
	}
	if links, err := db.LTIGradeLinks(ctx, first.Learner); err != nil || len(links) != 1 {
		t.Fatalf("after a graded launch: %v %v", links, err)
	}

	// Another device's learner, known to have none, takes this one's work.
	other := NewLearnerID()
	if links, _ := db.LTIGradeLinks(ctx, other); len(links) != 0 {
		t.Fatal("a new learner has links")
	}
	if err := db.MergeLearners(ctx, first.Learner, other); err != nil {
		t.Fatal(err)
	}
	if links, err := db.LTIGradeLinks(ctx, other); err != nil || len(links) != 1 {
		t.Fatalf("after the merge: %v %v", links, err)
	}
}
