package answer

import (
	"math/rand/v2"
	"testing"
	"time"
)

// appendTime writes what time.Format writes with the one layout of times
// in answers.
func TestAppendTime(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 2, 6, 10, 0, 0, 123456789, time.UTC),
		time.Date(2026, 2, 6, 12, 0, 0, 999999999, time.FixedZone("EET", 2*3600)),
		time.Date(2026, 12, 31, 23, 59, 59, 1e6, time.FixedZone("", -11*3600)),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(999, 3, 4, 5, 6, 7, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).In(time.FixedZone("", (r.IntN(27)-12)*3600)))
	}
	for _, tm := range times {
		want := `"` + tm.UTC().Format(timeLayout) + `"`
		if got := string(appendTime(nil, tm)); got != want {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
	if got := string(appendTime(nil, time.Time{})); got != "null" {
		t.Errorf("the zero time: got %s, want null", got)
	}
}
