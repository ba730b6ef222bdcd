package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAccountsManage(t *testing.T) {
	lowCost(t)
	ctx := context.Background()
	db := openInstructorsDB(t)

	ada, err := db.CreateInstructor(ctx, "ada", "first password!")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteInstructor(ctx, "ada"); !errors.Is(err, ErrLastInstructor) {
		t.Fatalf("removing the last account: err = %v", err)
	}
	if _, err := db.CreateInstructor(ctx, "bob", "bob's password"); err != nil {
		t.Fatal(err)
	}
	list, err := db.Instructors(ctx)
	if err != nil || len(list) != 2 || list[0].Username != "ada" || list[1].Username != "bob" {
		t.Fatalf("list = %+v, %v", list, err)
	}

	// A new password ends the other sessions, keeps the named one.
	keep, _, _ := db.CreateSession(ctx, ada.ID, time.Hour)
	other, _, _ := db.CreateSession(ctx, ada.ID, time.Hour)
	if err := db.ChangeOwnPassword(ctx, "ada", "wrong password", "second password", keep); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("wrong current password: err = %v", err)
	}
	if err := db.ChangeOwnPassword(ctx, "ada", "first password!", "second password", keep); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionInstructor(ctx, keep); err != nil {
		t.Errorf("kept session ended: %v", err)
	}
	if _, err := db.SessionInstructor(ctx, other); !errors.Is(err, ErrNoSession) {
		t.Errorf("other session survived the password change: %v", err)
	}
	if _, err := db.Authenticate(ctx, "ada", "first password!"); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("old password still works")
	}
	if _, err := db.Authenticate(ctx, "ada", "second password"); err != nil {
		t.Errorf("new password: %v", err)
	}
	if err := db.ChangePassword(ctx, "nobody", "long enough pw", ""); !errors.Is(err, ErrNoInstructor) {
		t.Errorf("unknown user: %v", err)
	}
	var ve *ValidationError
	if err := db.ChangePassword(ctx, "ada", "short", ""); !errors.As(err, &ve) {
		t.Errorf("short password: %v", err)
	}

	if err := db.DeleteInstructor(ctx, "ADA"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionInstructor(ctx, keep); !errors.Is(err, ErrNoSession) {
		t.Errorf("session of a removed account lives: %v", err)
	}
	if err := db.DeleteInstructor(ctx, "ada"); !errors.Is(err, ErrNoInstructor) {
		t.Errorf("removing twice: %v", err)
	}
}

func TestInvites(t *testing.T) {
	lowCost(t)
	ctx := context.Background()
	db := openInstructorsDB(t)
	ada, err := db.CreateInstructor(ctx, "ada", "first password!")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := db.CreateInvite(ctx, ada.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := db.InviteValid(ctx, tok); !ok || err != nil {
		t.Fatalf("fresh invite valid = %v, %v", ok, err)
	}
	// A taken username leaves the invitation usable.
	if _, err := db.RedeemInvite(ctx, tok, "ADA", "another password"); !errors.Is(err, ErrInstructorTaken) {
		t.Fatalf("taken name: %v", err)
	}
	bob, err := db.RedeemInvite(ctx, tok, "bob", "bob's password")
	if err != nil || bob.Username != "bob" {
		t.Fatalf("redeem = %+v, %v", bob, err)
	}
	if _, err := db.RedeemInvite(ctx, tok, "carol", "carol's password"); !errors.Is(err, ErrBadInvite) {
		t.Fatalf("second use: %v", err)
	}
	if ok, _ := db.InviteValid(ctx, tok); ok {
		t.Error("used invite still valid")
	}
	old, _, _ := db.CreateInvite(ctx, ada.ID, -time.Second)
	if ok, _ := db.InviteValid(ctx, old); ok {
		t.Error("expired invite valid")
	}
	if _, err := db.RedeemInvite(ctx, old, "carol", "carol's password"); !errors.Is(err, ErrBadInvite) {
		t.Fatalf("expired: %v", err)
	}
	// Removing the inviter keeps an open invitation usable.
	tok2, _, _ := db.CreateInvite(ctx, ada.ID, time.Hour)
	if err := db.DeleteInstructor(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RedeemInvite(ctx, tok2, "carol", "carol's password"); err != nil {
		t.Fatalf("invite of a removed instructor: %v", err)
	}
}
