package workflow

import (
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
