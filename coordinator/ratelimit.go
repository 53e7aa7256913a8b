package coordinator

import (
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/lazyregexp"
)

// A rate limit is not a crash: the task is paused without counting, and
// the slot waits. Where the agent's output says when the limit resets,
// every slot of that harness or account waits until then, not a guessed
// hour longer; otherwise the slot alone backs off, doubling each time.

var (
	// Claude Code: "Claude AI usage limit reached|1764190800".
	resetEpochRE = lazyregexp.New(`\|(\d{10})\b`)
	// "2026-11-26T22:00:00Z", with or without seconds and offset.
	resetISORE = lazyregexp.New(`\b(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)`)
	// "try again in 20s", "in 1m30.5s", "retry after 5 minutes", "Retry-After: 120".
	resetCompactRE = lazyregexp.New(`(?i)\b(?:in|after)\s+((?:\d+(?:\.\d+)?[hms]){1,3})\b`)
	resetSpelledRE = lazyregexp.New(`(?i)\b(?:in|after)\s+(\d+(?:\.\d+)?)\s*(hours?|hrs?|minutes?|mins?|seconds?|secs?)\b`)
	resetHeaderRE  = lazyregexp.New(`(?i)retry-after:\s*(\d+)\b`)
	resetClockRE   = lazyregexp.New(`(?i)\breset[s]?\b(?:\s+at)?\s+(\d{1,2})(?::(\d\d))?\s*(am|pm)?\b`)
)

// resetTime finds, in a line of output, when a rate limit resets. now is
// the time the line came.
func resetTime(line string, now time.Time) (time.Time, bool) {
	if m := resetEpochRE().FindStringSubmatch(line); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		if t := time.Unix(n, 0); t.After(now.Add(-time.Minute)) && t.Before(now.Add(7*24*time.Hour)) {
			return t, true
		}
	}
	if m := resetISORE().FindStringSubmatch(line); m != nil {
		s := strings.Replace(m[1], " ", "T", 1)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02T15:04"} {
			if t, err := time.ParseInLocation(layout, s, time.Local); err == nil && t.After(now.Add(-time.Minute)) {
				return t, true
			}
		}
	}
	var d time.Duration
	if m := resetCompactRE().FindStringSubmatch(line); m != nil {
		d, _ = time.ParseDuration(strings.ToLower(m[1]))
	} else if m := resetSpelledRE().FindStringSubmatch(line); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		unit := time.Second
		switch strings.ToLower(m[2])[0] {
		case 'h':
			unit = time.Hour
		case 'm':
			unit = time.Minute
		}
		d = time.Duration(f * float64(unit))
	} else if m := resetHeaderRE().FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		d = time.Duration(n) * time.Second
	}
	if d > 0 && d < 7*24*time.Hour {
		return now.Add(d), true
	}
	if m := resetClockRE().FindStringSubmatch(line); m != nil {
		h, _ := strconv.Atoi(m[1])
		min, _ := strconv.Atoi(m[2])
		switch strings.ToLower(m[3]) {
		case "pm":
			if h < 12 {
				h += 12
			}
		case "am":
			if h == 12 {
				h = 0
			}
		}
		if h < 24 && min < 60 {
			local := now.In(time.Local)
			t := time.Date(local.Year(), local.Month(), local.Day(), h, min, 0, 0, time.Local)
			if !t.After(now) {
				t = t.Add(24 * time.Hour)
			}
			return t, true
		}
	}
	return time.Time{}, false
}
