package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRolesAndInvites: a TA's invitation names its class; pending
// invitations are listed (who, role, class, expiry) and revocable; the
// redeemed TA account has the role and its class; instructors' accounts
// stay instructors.
func TestRolesAndInvites(t *testing.T) {
	ctx := context.Background()
	db := openInstructorsDB(t)
	ada, err := db.CreateInstructor(ctx, "ada", "correct horse battery")
	if err != nil || ada.Role != RoleInstructor || ada.TA() {
		t.Fatalf("instructor: %+v %v", ada, err)
	}
	c, _ := db.CreateCohort(ctx, "RDMA 2026", ada.ID)
	var ve *ValidationError
	if _, _, err := db.CreateRoleInvite(ctx, ada.ID, time.Hour, RoleTA, 0); !errors.As(err, &ve) {
		t.Errorf("a TA invitation without a class: %v", err)
	}
	if _, _, err := db.CreateRoleInvite(ctx, ada.ID, time.Hour, "root", 0); !errors.As(err, &ve) {
		t.Errorf("an unknown role: %v", err)
	}
	taTok, _, err := db.CreateRoleInvite(ctx, ada.ID, time.Hour, RoleTA, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	inTok, _, err := db.CreateInvite(ctx, ada.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	list, err := db.Invites(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("invites %+v %v", list, err)
	}
	v, err := db.InviteByToken(ctx, taTok)
	if err != nil || v.Role != RoleTA || v.Cohort != "RDMA 2026" || v.By != "ada" || v.ExpiresAt.Sub(v.CreatedAt) != time.Hour {
		t.Errorf("TA invite %+v %v", v, err)
	}
	other, _ := db.InviteByToken(ctx, inTok)
	if err := db.RevokeInvite(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RedeemInvite(ctx, inTok, "mallory", "a long password"); !errors.Is(err, ErrBadInvite) {
		t.Errorf("a revoked invitation worked: %v", err)
	}
	ta, err := db.RedeemInvite(ctx, taTok, "tom", "a long password")
	if err != nil || !ta.TA() {
		t.Fatalf("TA account %+v %v", ta, err)
	}
	if in, err := db.Authenticate(ctx, "tom", "a long password"); err != nil || !in.TA() {
		t.Errorf("TA login %+v %v", in, err)
	}
	if ids, _ := db.TACohorts(ctx, ta.ID); len(ids) != 1 || ids[0] != c.ID {
		t.Errorf("TA classes %v", ids)
	}
	if err := db.SetCohortTA(ctx, c.ID, ada.ID, true); !errors.Is(err, ErrNoInstructor) {
		t.Errorf("an instructor assigned as TA: %v", err)
	}
	d, _ := db.CreateCohort(ctx, "RDMA 2027", ada.ID)
	if err := db.SetCohortTA(ctx, d.ID, ta.ID, true); err != nil {
		t.Fatal(err)
	}
	tas, _ := db.CohortTAs(ctx)
	if len(tas[d.ID]) != 1 || tas[d.ID][0].Username != "tom" {
		t.Errorf("class TAs %+v", tas)
	}
	db.SetCohortTA(ctx, c.ID, ta.ID, false)
	if ids, _ := db.TACohorts(ctx, ta.ID); len(ids) != 1 || ids[0] != d.ID {
		t.Errorf("TA classes after unassigning %v", ids)
	}
}
