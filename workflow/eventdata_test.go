package workflow

import "testing"

// TestEventDataTypes: each action that writes an event reads its data as
// the type that writes it, and the actions of commits without an event have
// no data type.
func TestEventDataTypes(t *testing.T) {
	for a := range eventActions {
		d := newData(a)
		if d == nil || d.Action() != a {
			t.Errorf("%s: data type %T", a, d)
		}
	}
	for _, a := range []Action{ActionEdit, ActionInit, ActionSync, "import"} {
		if d := newData(a); d != nil {
			t.Errorf("%s: data type %T, want none", a, d)
		}
	}
	// Every verb of the transition table writes an event.
	for _, tr := range Transitions {
		if !eventActions[tr.Verb] {
			t.Errorf("the transition table's %s writes no event", tr.Verb)
		}
	}
	// The review decisions record a scoped reviewer's ground.
	for _, a := range []Action{ActionApprove, ActionReject, ActionReview, ActionAmendRejection} {
		if _, ok := newData(a).(scoped); !ok {
			t.Errorf("%s data has no ground", a)
		}
	}
}
