package rdmalab

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEventCost: what a message counts against RunBytesMax is at least
// what the lab's own encoding of it takes, whatever characters a hostile
// agent sends raw (valid JSON, nothing escaped).
func TestEventCost(t *testing.T) {
	for _, msg := range []string{"plain text", strings.Repeat("<>&", 1000), "\u2028\u2029 line separators", "bad \xff\xfe bytes", "日本語 and 中文"} {
		b, err := json.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		if c, enc := EventCost([]byte(msg)), len(b)-2; c < enc {
			t.Errorf("%q: cost %d, but the lab's encoding takes %d bytes", msg[:min(len(msg), 20)], c, enc)
		}
	}
}
