// Package harness reads the output of the coding-agent CLIs orch runs:
// what the log shows of each line, and how the run ended (a Result: did
// it fail, why, until when a limit holds, what it spent). It starts no
// process: the coordinator gives a Reader every line of a run's output,
// stdout and stderr merged in order, then the exit code (Finish).
//
//	r := harness.NewReader("claude", time.Now)
//	for each line { log(r.Line(line)...) }
//	res := r.Finish(exitCode)
//
// # The rule: only the CLI's own word counts
//
// A run's output is mostly the agent's work: its text, its commands and
// their output, which talk of anything ("the client gives up on HTTP 429
// too early"). None of it is ever evidence of a limit or an error. The
// evidence is what the CLI itself says about the run:
//
// claude (claude -p --output-format stream-json --verbose): the final
// result event, {"type":"result","subtype":"success","is_error":true,
// "terminal_reason":"api_error","api_error_status":429,"api_error_type":
// "rate_limit_error","api_error":"usage_limit_reached","result":TEXT,
// "total_cost_usd":...,"usage":{...},"permission_denials":[...]}. A run
// failed when is_error is true, whatever the subtype (API errors come
// with subtype "success" and exit status 1). The cause is read from TEXT
// (the message Claude Code words for the error) together with the typed
// fields: api_error_status, api_error_type, api_error, and the "error" of
// the synthetic assistant message before the result ("rate_limit",
// "authentication_failed", ...). A limit's reset time is the resetsAt of
// a rate_limit_event whose status is "rejected" (subscribers only:
// Claude Code reads the anthropic-ratelimit-unified-* headers only when
// logged in with claude.ai, never with an API key), else the time in
// TEXT ("You've hit your 5-hour limit · resets 8:09pm (Europe/Berlin)").
// rate_limit_events with status allowed or allowed_warning are shown in
// the log and are never a cause. system api_retry events count as
// Retries; their error is only used when the run ended without a result
// (killed while retrying). permission_denials (and system
// permission_denied events, which name the parts of a compound command
// that needed approval) give Denials.
//
// codex (codex exec --json): turn.completed (success, with the usage) or
// turn.failed {"error":{"message":M}}, after {"type":"error","message":M}.
// The cause is read from M, its HTTP status from the message itself
// ("last status: 429", "unexpected status 401"). Error events
// "Reconnecting... 1/5 (M)" are retries, counted, used only when the run
// ended without turn.failed. Items of type "error" are warnings (config
// notices, "model metadata not found"): shown, never a cause.
//
// Plain text (any other kind): there is no structure, so only a failed
// run is read (a non-zero exit code, given to Finish), and only its last
// five non-blank lines of text, newest first: the first that says
// something the classifier knows (a limit, a login, a model, an API
// error) gives the cause, else it is a crash. A run that exits 0 has no
// cause, whatever it printed. This is weaker than the structured kinds:
// a failed run whose last lines are the agent's own output about rate
// limits is taken for a rate limit.
//
// The same tail rule reads the text lines (not events) a claude or codex
// run printed, when it ended without its final event: a CLI that failed
// before it began its stream says why on stderr.
//
// # Causes
//
// In order: an HTTP status of 500 or more, or an overload, is API; a
// quota message ("insufficient_quota", "Quota exceeded. Check your plan
// and billing details.", "credit balance is too low") is Quota, never a
// wait; a usage-limit message ("You've hit your ... limit", "usage limit",
// "Claude AI usage limit reached|<epoch>") is UsageLimit; a rate-limit
// message, a 429, or a bare retry time ("try again in 20s") is RateLimit;
// then Auth (not logged in, invalid or missing API key, expired login,
// 401, 403), Model (model not found, no access), API (any other API or
// network error), else Crash. Permission is the cause of a run with
// denied tool calls that nothing else explains, even one that ended well:
// whether the run finished its work is the coordinator's to know, and it
// reads Permission only for a run that did not.
//
// ParseLimit reads the limit messages and their reset times for any
// harness. Codex prints its reset times in the local time of the machine
// it runs on; they are read in the location of the Reader's now().
//
// # The log
//
// Line returns what the log shows for a line: assistant text, "$ command"
// for a shell call, "tool: Name(argument)" for another tool, a tool's
// result clipped to three lines, retries, denials, the result ("result:
// success, 5 turns, $0.0123, 12345 in / 678 out tokens"). Codex's plain
// output (exec without --json) echoes the prompt after its banner; Line
// leaves it out, with one line that says how many lines it was. Nothing
// it returns has a control character.
package harness
