package harness

import (
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/lazyregexp"
	"github.com/orch-tool/orch/internal/text"
)

// A Cause is why a run ended badly, as the CLI's own error output says.
type Cause string

const (
	None       Cause = ""            // nothing went wrong that the CLI said
	RateLimit  Cause = "rate_limit"  // too many requests: wait (until ResetAt when known)
	UsageLimit Cause = "usage_limit" // a plan's 5-hour, weekly, ... limit: wait until ResetAt
	Quota      Cause = "quota"       // no credit or quota left: gone until someone pays, not a wait
	Auth       Cause = "auth"        // not logged in, invalid or missing API key, expired login
	Model      Cause = "model"       // the model does not exist or the account has no access
	Permission Cause = "permission"  // tools the agent needed were denied (Result.Denials)
	API        Cause = "api"         // another API error: 5xx, overloaded, network
	Crash      Cause = "crash"       // the run failed and none of the above explains it
)

// Wait reports whether the cause passes by itself: a rate or usage limit.
func (c Cause) Wait() bool { return c == RateLimit || c == UsageLimit }

var (
	// Claude Code (old): "Claude AI usage limit reached|1764190800".
	epochRE = lazyregexp.New(`\|(\d{10})\b`)
	// "2026-11-26T22:00:00Z", with or without seconds and offset.
	isoRE = lazyregexp.New(`\b(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)`)
	// A clock time after "resets", "try again at", ...: Claude Code's
	// "resets 8:09pm (UTC)", "resets Dec 5, 6:29am (Europe/Berlin)";
	// Codex's "try again at 7:50 PM.", "try again at Dec 5th, 2026 6:29 AM."
	// The time needs minutes or am/pm, so that "resets 3 files" is none.
	clockRE = lazyregexp.New(`(?i)\b(?:resets?(?:\s+at)?|try again at|retry at|again at|available at)\s+` +
		`(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+)?` +
		`(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?` +
		`(\d{1,2})(?:(?::(\d\d))\s*([ap]\.?m\b\.?)?|\s*([ap]\.?m\b\.?))` +
		`(?:\s*\(([A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*)\)|\s+(UTC|GMT)\b)?`)
	// "try again in 20s", "in 1m30.5s", "retry after 5 minutes", "Retry-After: 120".
	compactRE = lazyregexp.New(`(?i)\b(?:in|after)\s+((?:\d+(?:\.\d+)?(?:ms|h|m|s)){1,3})\b`)
	spelledRE = lazyregexp.New(`(?i)\b(?:in|after)\s+(\d+(?:\.\d+)?)\s*(hours?|hrs?|minutes?|mins?|seconds?|secs?)\b`)
	headerRE  = lazyregexp.New(`(?i)\bretry-after:?\s*(\d+)\b`)

	// The kinds of limit, by their words. Quota first: Codex's usage-limit
	// message offers to "purchase more credits", a quota message never
	// says "usage limit".
	quotaRE = lazyregexp.New(`(?i)insufficient_quota|quota exceeded|exceeded your current quota|plan and billing|billing details|` +
		`credit balance is too low|out of (?:usage )?credits|spend limit|upgrade to plus: |billing_error`)
	usageRE = lazyregexp.New(`(?i)\bhit your\b.{0,40}\blimit\b|usage.limit|\b(?:5-hour|five.hour|session|weekly|daily|monthly|opus|sonnet) limit\b`)
	rateRE  = lazyregexp.New(`(?i)rate.?limit|too many requests|\b429\b|throttl`)
	// The limit's own name: "You've hit your weekly limit" gives "weekly limit".
	limitNameRE = lazyregexp.New(`(?i)\bhit your ([\w'\- ]{1,30}? limit)\b`)
)

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}

const (
	// grace is how far in the past a reset time may lie and still be
	// taken: clocks differ, and a message that says 7:16 PM means any
	// second of that minute.
	grace = 10 * time.Minute
	// farthest is the latest reset time believed; the caller caps lower.
	farthest = 366 * 24 * time.Hour
)

// normalize makes the CLIs' typography plain: curly apostrophes and
// quotes, non-breaking spaces, the middle dots Claude Code puts between
// parts of a message.
func normalize(s string) string {
	return strings.NewReplacer("\u2019", "'", "\u2018", "'", "\u201c", `"`, "\u201d", `"`,
		"\u00a0", " ", "\u202f", " ", "\u2009", " ").Replace(s)
}

// ParseLimit reads a limit message (a CLI's final message or error
// output, never an agent's work text): whether it is one, which kind, and
// when it resets. A rate limit or a usage limit has a reset time when the
// message gives one (zero otherwise); a quota never does, however worded,
// for it does not pass by waiting. ok is false when msg is no limit
// message. A bare retry time ("try again in 20s") is taken for a rate
// limit.
//
// Times are read against now: a clock time without a date is today's, or
// tomorrow's once it has passed (up to ten minutes ago it counts as
// today's, just passed); a zone in parentheses ("(Europe/Berlin)", an
// IANA name) is used when this machine knows it, else the time is now's
// location's, as are Codex's times, which are the local time of the
// machine it runs on (time.Now() is in time.Local). A time more than ten
// minutes past, or more than a year ahead, is no reset time.
func ParseLimit(msg string, now time.Time) (cause Cause, resetAt time.Time, ok bool) {
	m := normalize(msg)
	switch {
	case quotaRE().MatchString(m):
		return Quota, time.Time{}, true
	case usageRE().MatchString(m):
		cause = UsageLimit
	case rateRE().MatchString(m):
		cause = RateLimit
	}
	at, found := resetTime(m, now)
	if cause == None {
		if !found {
			return None, time.Time{}, false
		}
		cause = RateLimit
	}
	return cause, at, true
}

// resetTime finds in m when a limit resets.
func resetTime(m string, now time.Time) (time.Time, bool) {
	believable := func(t time.Time) bool { return t.After(now.Add(-grace)) && t.Before(now.Add(farthest)) }
	if sm := epochRE().FindStringSubmatch(m); sm != nil {
		n, _ := strconv.ParseInt(sm[1], 10, 64)
		if t := time.Unix(n, 0); believable(t) {
			return t, true
		}
	}
	if sm := isoRE().FindStringSubmatch(m); sm != nil {
		s := strings.Replace(sm[1], " ", "T", 1)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00",
			"2006-01-02T15:04Z0700", "2006-01-02T15:04:05", "2006-01-02T15:04"} {
			if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
				if believable(t) {
					return t, true
				}
				break
			}
		}
	}
	if sm := clockRE().FindStringSubmatch(m); sm != nil {
		if t, ok := clockTime(sm, now); ok && believable(t) {
			return t, true
		}
	}
	var d time.Duration
	if sm := compactRE().FindStringSubmatch(m); sm != nil {
		d, _ = time.ParseDuration(strings.ToLower(sm[1]))
	} else if sm := spelledRE().FindStringSubmatch(m); sm != nil {
		f, _ := strconv.ParseFloat(sm[1], 64)
		unit := time.Second
		switch strings.ToLower(sm[2])[0] {
		case 'h':
			unit = time.Hour
		case 'm':
			unit = time.Minute
		}
		d = time.Duration(f * float64(unit))
	} else if sm := headerRE().FindStringSubmatch(m); sm != nil {
		n, _ := strconv.Atoi(sm[1])
		d = time.Duration(n) * time.Second
	}
	if d > 0 && d < farthest {
		return now.Add(d), true
	}
	return time.Time{}, false
}

// clockTime makes a time of clockRE's submatches: month, day, year, hour,
// minute, am/pm (after minutes), am/pm (without minutes), zone, UTC/GMT.
func clockTime(sm []string, now time.Time) (time.Time, bool) {
	hour, _ := strconv.Atoi(sm[4])
	minute, _ := strconv.Atoi(sm[5])
	ampm := strings.ToLower(strings.ReplaceAll(sm[6]+sm[7], ".", ""))
	switch {
	case ampm != "" && (hour < 1 || hour > 12):
		return time.Time{}, false
	case ampm == "pm" && hour < 12:
		hour += 12
	case ampm == "am" && hour == 12:
		hour = 0
	}
	if hour > 23 || minute > 59 {
		return time.Time{}, false
	}
	loc := now.Location()
	if z, ok := zone(sm[8] + sm[9]); ok {
		loc = z
	}
	n := now.In(loc)
	if sm[1] != "" {
		day, _ := strconv.Atoi(sm[2])
		year, explicit := n.Year(), sm[3] != ""
		if explicit {
			year, _ = strconv.Atoi(sm[3])
		}
		month := months[strings.ToLower(sm[1][:3])]
		t := time.Date(year, month, day, hour, minute, 0, 0, loc)
		if t.Day() != day { // Feb 30th
			return time.Time{}, false
		}
		if !explicit && !t.After(now.Add(-grace)) { // "Jan 2" read on Dec 30th
			t = time.Date(year+1, month, day, hour, minute, 0, 0, loc)
		}
		return t, true
	}
	t := time.Date(n.Year(), n.Month(), n.Day(), hour, minute, 0, 0, loc)
	if !t.After(now.Add(-grace)) {
		t = time.Date(n.Year(), n.Month(), n.Day()+1, hour, minute, 0, 0, loc)
	}
	return t, true
}

// zone is the location a message names, when this machine knows it.
func zone(name string) (*time.Location, bool) {
	switch strings.ToUpper(name) {
	case "":
		return nil, false
	case "UTC", "GMT", "Z", "ETC/UTC":
		return time.UTC, true
	case "LOCAL":
		return nil, false
	}
	loc, err := time.LoadLocation(name)
	return loc, err == nil
}

// when words a reset time for a note: "20:09 UTC", or "Dec 5 06:29 UTC"
// when it is not today, in now's location.
func when(t, now time.Time) string {
	t = t.In(now.Location())
	n := now.In(now.Location())
	if y, m, d := t.Date(); y == n.Year() && m == n.Month() && d == n.Day() {
		return t.Format("15:04 MST")
	}
	if t.Year() != n.Year() {
		return t.Format("Jan 2 2006 15:04 MST")
	}
	return t.Format("Jan 2 15:04 MST")
}

var (
	statusRE = lazyregexp.New(`(?i)(?:\bstatus(?: code)?:?\s*|\bAPI Error:?\s*|\(|\bHTTP\s*)([1-5]\d\d)\b`)
	// The errors that are not limits.
	overloadRE   = lazyregexp.New(`(?i)overloaded|high demand|\b529\b|\b503\b`)
	notLoggedRE  = lazyregexp.New(`(?i)not logged in|please run /login|run .?codex login|no (?:api key|credentials) (?:found|provided)|sign in again|log in again|login again`)
	badKeyRE     = lazyregexp.New(`(?i)invalid (?:x-)?api.?key|incorrect api key|api key (?:is )?invalid|invalid bearer|authentication_error|authentication_failed|invalid_api_key`)
	missingKeyRE = lazyregexp.New("(?i)missing environment variable:? `?([A-Za-z_][A-Za-z0-9_]*)`?")
	expiredRE    = lazyregexp.New(`(?i)(?:oauth|access|refresh) token (?:has )?(?:expired|been revoked|revoked|could not be refreshed)|token expired|session expired`)
	authRE       = lazyregexp.New(`(?i)\bunauthori[sz]ed\b|\bforbidden\b|permission_error|oauth_org_not_allowed|account_on_hold|verification_required|\b401\b`)
	modelNameRE  = lazyregexp.New("(?i)(?:issue with the selected model \\(([^)]+)\\)|\\bmodel [`'\"]?([\\w.:/\\-]+?)[`'\"]? does not exist|model_not_found|model not found:? ?[`'\"]?([\\w.:/\\-]*)|not_found_error.{0,40}model:? ?([\\w.:/\\-]+)|no such model:? ?([\\w.:/\\-]*))")
	apiRE        = lazyregexp.New(`(?i)api error|server.error|internal server error|stream disconnected|connection (?:failed|refused|reset|error)|error sending request|waiting for network|\bapi_error\b|bad gateway|service unavailable|gateway timeout`)
)

// statusIn finds an HTTP status in a CLI's error message: Codex's
// "last status: 429", "unexpected status 401 Unauthorized", Claude Code's
// "API Error: 500", "Request rejected (429)".
func statusIn(m string) int {
	if sm := statusRE().FindStringSubmatch(m); sm != nil {
		n, _ := strconv.Atoi(sm[1])
		return n
	}
	return 0
}

// classify reads a CLI's error message (and the HTTP status, 0 when
// unknown) into a cause, its words and, for a limit, its reset time.
func classify(msg string, status int, now time.Time) (Cause, string, time.Time) {
	m := normalize(msg)
	if status == 0 {
		status = statusIn(m)
	}
	if status >= 500 || overloadRE().MatchString(m) {
		return API, apiWords(m, status), time.Time{}
	}
	if c, at, ok := ParseLimit(m, now); ok {
		return c, limitWords(c, m, status, at, now), at
	}
	if status == 429 {
		return RateLimit, limitWords(RateLimit, m, status, time.Time{}, now), time.Time{}
	}
	if c, words, ok := authOrModel(m, status); ok {
		return c, words, time.Time{}
	}
	if status >= 400 || apiRE().MatchString(m) {
		return API, apiWords(m, status), time.Time{}
	}
	return Crash, crashWords(m), time.Time{}
}

func authOrModel(m string, status int) (Cause, string, bool) {
	switch sm := modelNameRE().FindStringSubmatch(m); {
	case sm != nil:
		name := strings.Join(sm[1:], "")
		if name == "" {
			return Model, "model not found", true
		}
		return Model, "model not found: " + text.Clip(name, 60), true
	case status == 404 && strings.Contains(strings.ToLower(m), "model"):
		return Model, "model not found", true
	}
	switch sm := missingKeyRE().FindStringSubmatch(m); {
	case notLoggedRE().MatchString(m):
		return Auth, "not logged in", true
	case badKeyRE().MatchString(m):
		return Auth, "invalid API key", true
	case sm != nil:
		return Auth, "missing API key: " + text.Clip(sm[1], 60), true
	case expiredRE().MatchString(m):
		return Auth, "login expired", true
	case status == 401 || status == 403 || authRE().MatchString(m):
		if status == 0 {
			return Auth, "authentication failed", true
		}
		return Auth, "authentication failed (" + strconv.Itoa(status) + ")", true
	}
	return None, "", false
}

// limitWords words a limit for a note: "usage limit until 20:09 UTC",
// "weekly limit until Dec 5 06:29 UTC", "rate limited (429), no reset
// time given", "quota exhausted (plan and billing)".
func limitWords(c Cause, m string, status int, at, now time.Time) string {
	var w string
	switch c {
	case Quota:
		return "quota exhausted (plan and billing)"
	case UsageLimit:
		w = "usage limit"
		if sm := limitNameRE().FindStringSubmatch(m); sm != nil && !strings.EqualFold(sm[1], "usage limit") {
			w = sm[1]
		}
	default:
		w = "rate limited"
		if status == 0 && rateRE().MatchString(m) && strings.Contains(m, "429") {
			status = 429
		}
		if status != 0 {
			w += " (" + strconv.Itoa(status) + ")"
		}
	}
	if at.IsZero() {
		return w + ", no reset time given"
	}
	return w + " until " + when(at, now)
}

func apiWords(m string, status int) string {
	switch {
	case overloadRE().MatchString(m) && status != 0:
		return "API overloaded (" + strconv.Itoa(status) + ")"
	case overloadRE().MatchString(m):
		return "API overloaded"
	case status != 0:
		return "API error (" + strconv.Itoa(status) + ")"
	}
	return "API error: " + crashWords(m)
}

func crashWords(m string) string {
	m = text.OneLine(text.Visible(m))
	if m == "" {
		return "failed"
	}
	return text.Clip(m, 100)
}
