package fleet

import (
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
)

func TestParseWorkerKeys(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	keys, err := ParseWorkerKeys("rnic-1=" + pub + ",\npool_2=" + pub)
	if err != nil || len(keys) != 2 || keys[0] != (WorkerKey{"rnic-1", pub}) || keys[1].Name != "pool_2" {
		t.Fatalf("keys %+v, err %v", keys, err)
	}
	for in, want := range map[string]string{
		pub:                                 "give each key its worker's name",
		"a.b=" + pub:                        "worker name",
		"аdmin=" + pub:                      "worker name", // Cyrillic а
		"w=SUAAB":                           "not a public user nkey",
		"w=" + pub + ",w=" + pub:            "named twice",
		strings.Repeat("x", 33) + "=" + pub: "worker name",
	} {
		if _, err := ParseWorkerKeys(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: %v, want %q", in, err, want)
		}
	}
}
