package rdmaexp

import (
	"testing"

	"github.com/rdmalab/rdmalab/sandbox/verbs"
)

// TestQPStatesLeft (issue 44 item 8): two QPs in one state are said once
// ("both QPs in ERROR"; it read "in ERROR and ERROR"), two states each
// with its side, in both languages.
func TestQPStatesLeft(t *testing.T) {
	same := qpStatesLeft(verbs.StateError, verbs.StateError)
	if same["en"] != "both QPs in ERROR" || same["zh"] != "两端 QP 都处于 ERROR" {
		t.Errorf("both in ERROR: %q", same)
	}
	diff := qpStatesLeft(verbs.StateRTS, verbs.StateError)
	if diff["en"] != "the server's QP in RTS and the client's in ERROR" || diff["zh"] != "服务端 QP 处于 RTS、客户端 QP 处于 ERROR" {
		t.Errorf("RTS and ERROR: %q", diff)
	}
}
