package harness

import (
	"strconv"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tests, on any machine
)

func zoneOf(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestParseLimit(t *testing.T) {
	utc := time.UTC
	berlin, newYork, tokyo, la := zoneOf(t, "Europe/Berlin"), zoneOf(t, "America/New_York"), zoneOf(t, "Asia/Tokyo"), zoneOf(t, "America/Los_Angeles")
	// Tuesday, December 1st 2026, 18:30 UTC: 19:30 in Berlin, 13:30 in
	// New York, 10:30 in Los Angeles, already Dec 2nd 03:30 in Tokyo.
	now := time.Date(2026, 12, 1, 18, 30, 0, 0, utc)
	at := func(loc *time.Location, m time.Month, d, h, min int) time.Time {
		return time.Date(2026, m, d, h, min, 0, 0, loc)
	}
	codex := func(when string) string {
		return "You\u2019ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at " + when + "."
	}
	tests := []struct {
		name  string
		msg   string
		now   time.Time
		cause Cause     // None: no limit message
		want  time.Time // zero: no reset time
	}{
		// Claude Code, subscribers.
		{"5h utc", "You've hit your 5-hour limit · resets 8:09pm (UTC)", now, UsageLimit, at(utc, 12, 1, 20, 9)},
		{"5h past today is tomorrow", "You've hit your 5-hour limit · resets 5:09pm (UTC)", now, UsageLimit, at(utc, 12, 2, 17, 9)},
		{"5h berlin", "You\u2019ve hit your 5-hour limit · resets 8:09pm (Europe/Berlin)", now, UsageLimit, at(berlin, 12, 1, 20, 9)},
		{"5h berlin past", "You've hit your 5-hour limit · resets 7:09pm (Europe/Berlin)", now, UsageLimit, at(berlin, 12, 2, 19, 9)},
		{"5h new york", "You've hit your 5-hour limit · resets 8:09pm (America/New_York)", now, UsageLimit, at(newYork, 12, 1, 20, 9)},
		{"5h new york morning is tomorrow", "You've hit your 5-hour limit · resets 8:09am (America/New_York)", now, UsageLimit, at(newYork, 12, 2, 8, 9)},
		{"5h tokyo midnight", "You've hit your 5-hour limit · resets 12am (Asia/Tokyo)", now, UsageLimit, at(tokyo, 12, 3, 0, 0)},
		{"5h tokyo noon", "You've hit your 5-hour limit · resets 12:30pm (Asia/Tokyo)", now, UsageLimit, at(tokyo, 12, 2, 12, 30)},
		{"5h no zone: now's", "You've hit your session limit · resets 3pm", now.In(la), UsageLimit, at(la, 12, 1, 15, 0)},
		{"5h unknown zone: now's", "You've hit your 5-hour limit · resets 8:09pm (Mars/Olympus_Mons)", now.In(berlin), UsageLimit, at(berlin, 12, 1, 20, 9)},
		{"weekly", "You've hit your weekly limit · resets Dec 5, 6:29am (UTC)", now, UsageLimit, at(utc, 12, 5, 6, 29)},
		{"weekly berlin", "You've hit your weekly limit · resets Dec 5, 6:29am (Europe/Berlin)", now, UsageLimit, at(berlin, 12, 5, 6, 29)},
		{"weekly new york", "You\u2019ve hit your weekly limit · resets Dec 4, 9:17pm (America/New_York)", now, UsageLimit, at(newYork, 12, 4, 21, 17)},
		{"weekly next year", "You've hit your weekly limit · resets Jan 3, 6:29am (UTC)", now, UsageLimit, time.Date(2027, 1, 3, 6, 29, 0, 0, utc)},
		{"opus", "You've hit your Opus limit · resets 8:09pm (UTC)", now, UsageLimit, at(utc, 12, 1, 20, 9)},
		{"sonnet", "You've hit your Sonnet limit · resets Dec 7, 1am (UTC)", now, UsageLimit, at(utc, 12, 7, 1, 0)},
		// Claude Code, older forms.
		{"epoch", "Claude AI usage limit reached|" + itoa(now.Add(2*time.Hour).Unix()), now, UsageLimit, now.Add(2 * time.Hour)},
		{"stale epoch", "Claude AI usage limit reached|1000000000", now, UsageLimit, time.Time{}},
		{"limit reached resets", "5-hour limit reached ∙ resets 9pm", now, UsageLimit, at(utc, 12, 1, 21, 0)},
		// Claude Code, HTTP 429 after its retries: no reset time.
		{"claude 429", "API Error: Request rejected (429) · This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.", now, RateLimit, time.Time{}},
		{"claude 429 usage", "API Error: Request rejected (429) · The usage limit has been reached", now, UsageLimit, time.Time{}},
		// Codex: local time, today...
		{"codex utc", codex("7:50 PM"), now, UsageLimit, at(utc, 12, 1, 19, 50)},
		{"codex los angeles", codex("7:50 PM"), now.In(la), UsageLimit, at(la, 12, 1, 19, 50)},
		{"codex morning is tomorrow", codex("9:15 AM"), now.In(la), UsageLimit, at(la, 12, 2, 9, 15)},
		{"codex tokyo", codex("3:45 AM"), now.In(tokyo), UsageLimit, at(tokyo, 12, 2, 3, 45)},
		{"codex just passed", codex("6:25 PM"), now, UsageLimit, at(utc, 12, 1, 18, 25)},
		{"codex long passed", codex("6:15 PM"), now, UsageLimit, at(utc, 12, 2, 18, 15)},
		{"codex noon", codex("12:05 PM"), now.In(la), UsageLimit, at(la, 12, 1, 12, 5)},
		{"codex midnight", codex("12:05 AM"), now, UsageLimit, at(utc, 12, 2, 0, 5)},
		// ... or another day, with its ordinal.
		{"codex date", codex("Dec 5th, 2026 6:29 AM"), now, UsageLimit, at(utc, 12, 5, 6, 29)},
		{"codex date tokyo", codex("Dec 5th, 2026 6:29 AM"), now.In(tokyo), UsageLimit, at(tokyo, 12, 5, 6, 29)},
		{"codex 1st", codex("Jan 1st, 2027 12:00 AM"), now, UsageLimit, time.Date(2027, 1, 1, 0, 0, 0, 0, utc)},
		{"codex 2nd", codex("Dec 2nd, 2026 1:00 PM"), now, UsageLimit, at(utc, 12, 2, 13, 0)},
		{"codex 3rd", codex("Dec 3rd, 2026 11:59 PM"), now, UsageLimit, at(utc, 12, 3, 23, 59)},
		{"codex 11th", codex("Dec 11th, 2026 10:00 AM"), now, UsageLimit, at(utc, 12, 11, 10, 0)},
		{"codex 22nd", codex("Dec 22nd, 2026 10:00 AM"), now, UsageLimit, at(utc, 12, 22, 10, 0)},
		{"codex 23rd", codex("Dec 23rd, 2026 10:00 AM"), now, UsageLimit, at(utc, 12, 23, 10, 0)},
		{"codex 31st", codex("Dec 31st, 2026 10:00 AM"), now, UsageLimit, at(utc, 12, 31, 10, 0)},
		{"codex plain wording", "You've hit your usage limit. Try again at 8:00 PM.", now, UsageLimit, at(utc, 12, 1, 20, 0)},
		{"codex team wording", "You've hit your usage limit. To get more access now, send a request to your admin or try again at Dec 4th, 2026 8:00 PM.", now, UsageLimit, at(utc, 12, 4, 20, 0)},
		{"codex later", "You've hit your usage limit. Try again later.", now, UsageLimit, time.Time{}},
		{"codex free plan", "You've hit your usage limit. Upgrade to Plus to continue using Codex (https://openai.com/chatgpt/pricing).", now, UsageLimit, time.Time{}},
		{"codex date past", codex("Nov 5th, 2026 6:29 AM"), now, UsageLimit, time.Time{}},
		{"codex 429", "exceeded retry limit, last status: 429 Too Many Requests", now, RateLimit, time.Time{}},
		// Quotas: gone, not a wait.
		{"insufficient_quota", "insufficient_quota", now, Quota, time.Time{}},
		{"codex quota", "Quota exceeded. Check your plan and billing details.", now, Quota, time.Time{}},
		{"claude quota", "API Error: Request rejected (429) · You exceeded your current quota, please check your plan and billing details.", now, Quota, time.Time{}},
		{"credit balance", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", now, Quota, time.Time{}},
		{"codex plan", "To use Codex with your ChatGPT plan, upgrade to Plus: https://openai.com/chatgpt/pricing.", now, Quota, time.Time{}},
		// Generic forms.
		{"in 20s", "rate limited; try again in 20s", now, RateLimit, now.Add(20 * time.Second)},
		{"bare in 20s", "try again in 20s", now, RateLimit, now.Add(20 * time.Second)},
		{"compound", "Please try again in 1m30.5s.", now, RateLimit, now.Add(90*time.Second + 500*time.Millisecond)},
		{"spelled", "429 Too Many Requests, retry after 5 minutes", now, RateLimit, now.Add(5 * time.Minute)},
		{"hours", "Rate limit exceeded, retry in 2 hours", now, RateLimit, now.Add(2 * time.Hour)},
		{"header", "Retry-After: 120", now, RateLimit, now.Add(2 * time.Minute)},
		{"iso", "limit resets at 2026-12-01T22:30:00Z", now, RateLimit, at(utc, 12, 1, 22, 30)},
		{"iso offset", "rate limit resets at 2026-12-01T22:30:00+01:00", now, RateLimit, at(utc, 12, 1, 21, 30)},
		{"iso no zone: now's", "usage limit, resets at 2026-12-01 22:30", now.In(berlin), UsageLimit, at(berlin, 12, 1, 22, 30)},
		{"iso past", "rate limit: resets at 2025-01-01T00:00:00Z", now, RateLimit, time.Time{}},
		{"iso far", "rate limit: resets at 2031-01-01T00:00:00Z", now, RateLimit, time.Time{}},
		// Not limits.
		{"overloaded", "overloaded", now, None, time.Time{}},
		{"files", "error in 3 files", now, None, time.Time{}},
		{"resets files", "the script resets 3 files", now, None, time.Time{}},
		{"model", "There's an issue with the selected model (claude-x). It may not exist or you may not have access to it.", now, None, time.Time{}},
		{"500", "API Error: 500 Internal. This is a server-side issue, usually temporary — try again in a moment.", now, None, time.Time{}},
		{"key", "Invalid API key · Fix external API key", now, None, time.Time{}},
		{"login", "Not logged in · Please run /login", now, None, time.Time{}},
		{"clock nonsense", "retry at 25:00", now, None, time.Time{}},
		{"empty", "", now, None, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause, got, ok := ParseLimit(tt.msg, tt.now)
			if ok != (tt.cause != None) || cause != tt.cause {
				t.Fatalf("ParseLimit(%q) = %q, %v, %v; want %q", tt.msg, cause, got, ok, tt.cause)
			}
			if !got.Equal(tt.want) {
				t.Errorf("ParseLimit(%q) reset %v, want %v", tt.msg, got, tt.want)
			}
		})
	}
}

func TestParseLimitYearEnd(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)
	for msg, want := range map[string]time.Time{
		"You've hit your weekly limit · resets Jan 2, 1:00am (UTC)":        time.Date(2027, 1, 2, 1, 0, 0, 0, time.UTC),
		"You've hit your 5-hour limit · resets 2:00am (UTC)":               time.Date(2027, 1, 1, 2, 0, 0, 0, time.UTC),
		"You've hit your usage limit. Try again at Jan 1st, 2027 1:00 AM.": time.Date(2027, 1, 1, 1, 0, 0, 0, time.UTC),
	} {
		if _, got, ok := ParseLimit(msg, now); !ok || !got.Equal(want) {
			t.Errorf("ParseLimit(%q) = %v, %v; want %v", msg, got, ok, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestClassify(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC)
	tests := []struct {
		msg    string
		status int
		cause  Cause
		words  string
	}{
		{"You've hit your 5-hour limit · resets 8:09pm (UTC)", 429, UsageLimit, "5-hour limit until 20:09 UTC"},
		{"You've hit your weekly limit · resets Dec 5, 6:29am (UTC)", 0, UsageLimit, "weekly limit until Dec 5 06:29 UTC"},
		{"You've hit your usage limit. Try again at 8:09 PM.", 0, UsageLimit, "usage limit until 20:09 UTC"},
		{"You've hit your usage limit. Try again later.", 0, UsageLimit, "usage limit, no reset time given"},
		{"API Error: Request rejected (429) · This request would exceed the rate limit for your organization", 429, RateLimit, "rate limited (429), no reset time given"},
		{"exceeded retry limit, last status: 429 Too Many Requests", 0, RateLimit, "rate limited (429), no reset time given"},
		{"Rate limit reached. Please try again in 20s.", 0, RateLimit, "rate limited until 18:30 UTC"},
		{"Quota exceeded. Check your plan and billing details.", 0, Quota, "quota exhausted (plan and billing)"},
		{"Not logged in · Please run /login", 0, Auth, "not logged in"},
		{"Invalid API key · Fix external API key", 401, Auth, "invalid API key"},
		{"Invalid API key · Please run /login", 401, Auth, "not logged in"},
		{"unexpected status 401 Unauthorized: Incorrect API key provided: sk-x.", 0, Auth, "invalid API key"},
		{"Missing environment variable: `OPENAI_API_KEY`.", 0, Auth, "missing API key: OPENAI_API_KEY"},
		{"OAuth token has expired. Please obtain a new token or refresh your existing token.", 401, Auth, "login expired"},
		{"unexpected status 403 Forbidden: nope", 0, Auth, "authentication failed (403)"},
		{"There's an issue with the selected model (claude-x). It may not exist or you may not have access to it. Run --model to pick a different model.", 404, Model, "model not found: claude-x"},
		{"The model `gpt-9` does not exist or you do not have access to it.", 0, Model, "model not found: gpt-9"},
		{"API Error: 500 boom. This is a server-side issue, usually temporary — try again in a moment.", 500, API, "API error (500)"},
		{"API Error: 529 Overloaded. This is a server-side issue", 529, API, "API overloaded (529)"},
		{"We\u2019re currently experiencing high demand, which may cause temporary errors.", 0, API, "API overloaded"},
		{"stream disconnected before completion: error decoding response body", 0, API, "API error: stream disconnected before completion: error decoding response body"},
		{"Codex ran out of room in the model's context window.", 0, Crash, "Codex ran out of room in the model's context window."},
		{"", 0, Crash, "failed"},
	}
	for _, tt := range tests {
		c, words, _ := classify(tt.msg, tt.status, now)
		if c != tt.cause || words != tt.words {
			t.Errorf("classify(%q, %d) = %q, %q; want %q, %q", tt.msg, tt.status, c, words, tt.cause, tt.words)
		}
	}
}

func TestWhen(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC)
	berlin := zoneOf(t, "Europe/Berlin")
	for _, tt := range []struct {
		t, now time.Time
		want   string
	}{
		{time.Date(2026, 12, 1, 20, 9, 0, 0, time.UTC), now, "20:09 UTC"},
		{time.Date(2026, 12, 2, 6, 29, 0, 0, time.UTC), now, "Dec 2 06:29 UTC"},
		{time.Date(2026, 12, 1, 20, 9, 0, 0, time.UTC), now.In(berlin), "21:09 CET"},
		{time.Date(2027, 1, 3, 6, 29, 0, 0, time.UTC), now, "Jan 3 2027 06:29 UTC"},
	} {
		if got := when(tt.t, tt.now); got != tt.want {
			t.Errorf("when(%v, %v) = %q, want %q", tt.t, tt.now, got, tt.want)
		}
	}
}
