package gitstore

import (
	"reflect"
	"testing"
)

// TestTrailersMessage: the subject, the body unless blank, the trailers in
// order, as git reads them; a value's line breaks cannot end its trailer.
func TestTrailersMessage(t *testing.T) {
	tr := Trailers{{TrailerTask, "T-aaaaaa"}, {TrailerAction, "reject"}}
	tr.Add(TrailerActor, "Ada  Tester") // spacing kept
	tr.Add(TrailerVerb, "a\nb\r\nc")
	for _, c := range []struct{ body, want string }{
		{"  Rejection #1.\n\n", "orch(T-aaaaaa): reject\n\nRejection #1.\n\nOrch-Task: T-aaaaaa\nOrch-Action: reject\nOrch-Actor: Ada  Tester\nOrch-Verb: a b c\n"},
		{" \n", "orch(T-aaaaaa): reject\n\nOrch-Task: T-aaaaaa\nOrch-Action: reject\nOrch-Actor: Ada  Tester\nOrch-Verb: a b c\n"},
	} {
		msg := tr.Message("orch(T-aaaaaa): reject", c.body)
		if msg != c.want {
			t.Errorf("body %q:\n got %q\nwant %q", c.body, msg, c.want)
		}
		if got := ParseTrailers(msg); !reflect.DeepEqual(got, Trailers{{TrailerTask, "T-aaaaaa"}, {TrailerAction, "reject"}, {TrailerActor, "Ada  Tester"}, {TrailerVerb, "a b c"}}) {
			t.Errorf("read back %v", got)
		}
	}
}

// TestParseTrailers: only a last paragraph made wholly of "Key: value"
// lines is trailers; a repeated key reads as its last value.
func TestParseTrailers(t *testing.T) {
	tr := ParseTrailers("orch: x\n\nBody: not a trailer here.\nSecond line\n\nOrch-Unlocked: a\nOrch-Unlocked: b\n\n")
	if tr.Get(TrailerUnlocked) != "b" || tr.Get(TrailerTask) != "" || len(tr) != 2 {
		t.Errorf("got %v", tr)
	}
	for _, msg := range []string{"orch: x", "orch: x\n\nA sentence: with a colon and words before it\n", "orch: x\n\nOrch-Task: T-a\nnot a trailer\n"} {
		if tr := ParseTrailers(msg); tr != nil {
			t.Errorf("%q: trailers %v", msg, tr)
		}
	}
}
