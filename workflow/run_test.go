package workflow

import (
	"strings"
	"testing"
	"time"
)

// TestClaimReviewNeverTakesALiveClaim: a review claim is a run's, not a
// name's. Two coordinators on one clone may each have a slot rev-1: the
// second finds the submission claimed (under its own name) and takes
// nothing, so one submission is never reviewed twice at once. Once the
// claim's lease has run out, it is taken over, with the next number.
func TestClaimReviewNeverTakesALiveClaim(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\n", map[string][]string{"Submitted": nil})
	id := ids["Submitted"]
	first := openAs(t, dir, "rev-1", true)
	rc, err := first.ClaimReview("", nil)
	first.Close()
	if err != nil || rc == nil || rc.Task.Task.ID != id || rc.Attempt != 1 {
		t.Fatalf("first claim = %+v, %v; want review 1 of %s", rc, err, id)
	}
	second := openAs(t, dir, "rev-1", true)
	rc, err = second.ClaimReview("", nil)
	second.Close()
	if err != nil || rc != nil {
		t.Fatalf("second claim by the same name took %+v (%v); want none while the first is live", rc, err)
	}
	later := openAs(t, dir, "rev-1", true)
	defer later.Close()
	later.Now = func() time.Time { return time.Now().Add(3 * time.Hour) } // past claim_timeout (2h)
	rc, err = later.ClaimReview("", nil)
	if err != nil || rc == nil || rc.Attempt != 2 {
		t.Fatalf("claim after the lease ran out = %+v, %v; want review 2", rc, err)
	}
}

// TestPromptSummarisesOlderNotes: the prompt shows the newest continuation
// note whole and each older one in a line, as older review rounds are, so
// that a task that crashed many times does not hand the next agent every
// log's tail.
func TestPromptSummarisesOlderNotes(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\n", map[string][]string{})
	_ = ids
	e := openCheck(t, dir, "tester")
	r, err := e.New(NewTask{Title: "Crashy"})
	e.Close()
	if err != nil {
		t.Fatal(err)
	}
	id := r.Task.Task.ID
	for i, note := range []string{"first try: parser half done\nsecond line of the first note", "second try: CLI flags next\nsecond line of the second note"} {
		a := openAs(t, dir, "agent-a", true)
		if _, err := a.Claim(ClaimOptions{Task: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Pause(id, note); err != nil {
			t.Fatalf("pause %d: %v", i, err)
		}
		a.Close()
	}
	b := openAs(t, dir, "agent-b", true)
	defer b.Close()
	p, _, err := b.Prompt(id, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"second try: CLI flags next\nsecond line of the second note", "first try: parser half done (`orch show " + id + "` has the whole note)"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "second line of the first note") {
		t.Errorf("prompt holds the older note whole:\n%s", p)
	}
}
