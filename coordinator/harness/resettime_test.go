package harness

import (
	"testing"
	"time"
)

// TestResetTimeForms: the reset times orch run read before the harness
// streams (coordinator's resetTime), read the same by ParseLimit.
func TestResetTimeForms(t *testing.T) {
	now := time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)
	loc := time.Local
	tests := []struct {
		line string
		want time.Time // zero: no reset time
	}{
		{"Claude AI usage limit reached|1795813200", time.Unix(1795813200, 0)},
		{"rate limited; try again in 20s", now.Add(20 * time.Second)},
		{"Please try again in 1m30.5s.", now.Add(90*time.Second + 500*time.Millisecond)},
		{"429 Too Many Requests, retry after 5 minutes", now.Add(5 * time.Minute)},
		{"Retry-After: 120", now.Add(2 * time.Minute)},
		{"quota resets at 2026-11-26T22:30:00Z", time.Date(2026, 11, 26, 22, 30, 0, 0, time.UTC)},
		{"usage limit; resets 11pm", time.Date(now.In(loc).Year(), now.In(loc).Month(), now.In(loc).Day(), 23, 0, 0, 0, loc)},
		{"overloaded", time.Time{}},
		{"error in 3 files", time.Time{}},
		{"stale epoch |1000000000", time.Time{}},
	}
	for _, tt := range tests {
		_, got, ok := ParseLimit(tt.line, now)
		ok = ok && !got.IsZero()
		if tt.want.IsZero() {
			if ok {
				t.Errorf("resetTime(%q) = %v, want none", tt.line, got)
			}
			continue
		}
		if !ok || !got.Equal(tt.want) {
			// a clock time may fall on the next day in the local zone
			if ok && tt.line == "usage limit; resets 11pm" && got.Equal(tt.want.Add(24*time.Hour)) {
				continue
			}
			t.Errorf("resetTime(%q) = %v, %v; want %v", tt.line, got, ok, tt.want)
		}
	}
}
