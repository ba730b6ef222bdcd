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

// Two labs asking for any port (":0") both start, each on a port of its
// own: nats-server reads port 0 as its default 4222, so the second used
// to wait for a port the first held and never start.
func TestServersOnAnyPort(t *testing.T) {
	var addrs []string
	for range 2 {
		s, err := Start(ServerConfig{Listen: "127.0.0.1:0", Token: strings.Repeat("t", 24), StoreDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		addrs = append(addrs, s.Addr())
	}
	if addrs[0] == addrs[1] || strings.HasSuffix(addrs[0], ":4222") || strings.HasSuffix(addrs[1], ":4222") {
		t.Errorf("servers asked for any port listen on %v", addrs)
	}
}
