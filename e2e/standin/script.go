package standin

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Text is a final answer.
func Text(s string) Reply { return Reply{Text: s} }

// Shell is a tool call that runs cmd in a shell.
func Shell(cmd string) Reply { return Reply{Shell: cmd} }

// RateLimit is a 429 whose headers say the limit resets in reset: the
// retry-after header, Anthropic's anthropic-ratelimit-*-reset (RFC 3339)
// and OpenAI's x-ratelimit-reset-* headers.
func RateLimit(reset time.Duration) Reply {
	at := time.Now().Add(reset).UTC().Format(time.RFC3339)
	secs := strconv.Itoa(int(reset.Round(time.Second) / time.Second))
	return Reply{Error: &Error{Status: 429, Headers: map[string]string{
		"retry-after":                             secs,
		"anthropic-ratelimit-requests-limit":      "50",
		"anthropic-ratelimit-requests-remaining":  "0",
		"anthropic-ratelimit-requests-reset":      at,
		"anthropic-ratelimit-input-tokens-reset":  at,
		"anthropic-ratelimit-output-tokens-reset": at,
		"anthropic-ratelimit-tokens-reset":        at,
		"x-ratelimit-limit-requests":              "50",
		"x-ratelimit-remaining-requests":          "0",
		"x-ratelimit-reset-requests":              secs + "s",
		"x-ratelimit-reset-tokens":                secs + "s",
	}}}
}

// Unauthorized is a 401: the API key was refused.
func Unauthorized() Reply { return Reply{Error: &Error{Status: 401}} }

// NoModel is a 404: the model asked for does not exist.
func NoModel() Reply { return Reply{Error: &Error{Status: 404}} }

// UsageLimit is the 429 Codex words as "You've hit your usage limit"
// (error type usage_limit_reached, with the time it resets).
func UsageLimit(reset time.Duration) Reply {
	at := time.Now().Add(reset).Unix()
	return Reply{Error: &Error{Status: 429, Body: fmt.Sprintf(
		`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":%d,"resets_in_seconds":%d}}`,
		at, int(reset/time.Second))}}
}

// Quota is OpenAI's 429 insufficient_quota: the account has no credit.
func Quota() Reply {
	return Reply{Error: &Error{Status: 429, Body: openaiErrorCoded("insufficient_quota", "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details.")}}
}

// vendorError is the error body the vendor sends for status.
func vendorError(api string, status int, model string) string {
	if api == "anthropic" {
		msg := map[int]string{
			401: "invalid x-api-key",
			404: "model: " + model,
			429: "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
			529: "Overloaded",
		}[status]
		if msg == "" {
			msg = "standin: error " + strconv.Itoa(status)
		}
		return anthropicError(status, msg)
	}
	switch status {
	case 401:
		return openaiErrorCoded("invalid_request_error", "invalid_api_key", "Incorrect API key provided: test-key. You can find your API key at https://platform.openai.com/account/api-keys.")
	case 404:
		return openaiErrorCoded("invalid_request_error", "model_not_found", "The model `"+model+"` does not exist or you do not have access to it.")
	case 429:
		return openaiErrorCoded("requests", "rate_limit_exceeded", "Rate limit reached for "+model+" on requests per min (RPM): Limit 50, Used 50, Requested 1. Please try again in 1s.")
	}
	return openaiErrorCoded("server_error", "", "standin: error "+strconv.Itoa(status))
}

// ByMarker plays the script whose marker occurs in the turn's prompt: its
// reply at index Step, and the last reply past its end. A prompt with no
// marker, or with several, gets a 400 naming the problem, so a test that
// forgot its marker fails loudly. Several agents can share one server,
// each prompt carrying its own marker.
func ByMarker(scripts map[string][]Reply) Player {
	return func(t *Turn) Reply {
		var found []string
		for marker := range scripts {
			if strings.Contains(t.Prompt, marker) {
				found = append(found, marker)
			}
		}
		if len(found) != 1 {
			return Reply{Error: &Error{Status: 400, Body: markerError(t.API,
				fmt.Sprintf("standin: %d script markers %q in prompt %.200q", len(found), found, t.Prompt))}}
		}
		script := scripts[found[0]]
		if len(script) == 0 {
			return Text("")
		}
		if t.Step >= len(script) {
			return Text("standin: end of script")
		}
		return script[t.Step]
	}
}

func markerError(api, msg string) string {
	if api == "anthropic" {
		return anthropicErrorTyped("invalid_request_error", msg)
	}
	return openaiErrorCoded("invalid_request_error", "", msg)
}
