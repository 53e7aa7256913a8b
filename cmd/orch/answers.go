package main

// answers names, for each command with a JSON answer, the Go type of the
// answer and its schema (docs/schema/NAME.json). --json=FIELDS checks the
// fields it names against the type; schema_test.go generates the schemas
// from the types, and fails for a command missing here.
var answers = map[string]struct {
	name string
	typ  any
}{
	"approve":               {"approve", transitionJSON{}},
	"archive":               {"archive", bulkAnswer{}},
	"board":                 {"board", boardAnswer{}},
	"check":                 {"check", checkAnswer{}},
	"claim":                 {"claim", claimAnswer{}},
	"completion bash":       {"completion", completionAnswer{}},
	"completion fish":       {"completion", completionAnswer{}},
	"completion powershell": {"completion", completionAnswer{}},
	"completion zsh":        {"completion", completionAnswer{}},
	"decide":                {"decide", decideAnswer{}},
	"diff":                  {"diff", diffAnswer{}},
	"doctor":                {"doctor", doctorAnswer{}},
	"edit":                  {"edit", editAnswer{}},
	"escalate":              {"escalate", bulkAnswer{}},
	"fail":                  {"fail", bulkAnswer{}},
	"heartbeat":             {"heartbeat", heartbeatAnswer{}},
	"inbox":                 {"inbox", inboxAnswer{}},
	"init":                  {"init", initAnswer{}},
	"instructions":          {"instructions", instructionsAnswer{}},
	"list":                  {"list", listAnswer{}},
	"log":                   {"log", logAnswer{}},
	"logs":                  {"logs", logsAnswer{}},
	"new":                   {"new", newAnswer{}},
	"pause":                 {"pause", transitionJSON{}},
	"pr import":             {"pr-import", prAnswer{}},
	"pr poll":               {"pr-poll", prAnswer{}},
	"prime":                 {"prime", primeAnswer{}},
	"prompt":                {"prompt", promptAnswer{}},
	"refuse":                {"refuse", transitionJSON{}},
	"reopen":                {"reopen", bulkAnswer{}},
	"reject":                {"reject", transitionJSON{}},
	"requeue":               {"requeue", bulkAnswer{}},
	"respond":               {"respond", transitionJSON{}},
	"review":                {"review", reviewAnswer{}},
	"run":                   {"run-event", runEvent{}},
	"serve":                 {"serve", serveAnswer{}},
	"setup":                 {"setup", setupAnswer{}},
	"show":                  {"show", showAnswer{}},
	"stats":                 {"stats", statsAnswer{}},
	"submit":                {"submit", transitionJSON{}},
	"sweep":                 {"sweep", sweepAnswer{}},
	"land":                  {"land", landAnswer{}},
	"sync":                  {"sync", syncAnswer{}},
	"unlock":                {"unlock", bulkAnswer{}},
	"version":               {"version", versionAnswer{}},
	"worktree":              {"worktree", worktreeAnswer{}},
	"worktree prune":        {"worktree-prune", pruneAnswer{}},
}

// noAnswer are the commands with no JSON answer: those that only group
// others, and orch mcp (it speaks MCP on stdout). With --json they are a
// usage error.
var noAnswer = map[string]bool{"completion": true, "pr": true, "mcp": true}
