package store

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

func TestSecretCreatedOnceAndKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lab.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.Secret(ctx, "cookie", 32)
	if err != nil || len(a) != 32 {
		t.Fatalf("secret: %d bytes, %v", len(a), err)
	}
	b, _ := db.Secret(ctx, "cookie", 32)
	other, _ := db.Secret(ctx, "other", 32)
	if !bytes.Equal(a, b) || bytes.Equal(a, other) {
		t.Error("a secret changed between calls, or two names share one")
	}
	db.Close()
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if c, _ := db.Secret(ctx, "cookie", 32); !bytes.Equal(a, c) {
		t.Error("secret not kept across restarts")
	}
	if _, err := db.Secret(ctx, "weak", 8); err == nil {
		t.Error("an 8-byte secret was accepted")
	}
}
