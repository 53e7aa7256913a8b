// Package standin is a stand-in model server for orch's end-to-end tests:
// the real Claude Code and Codex CLIs are pointed at it on 127.0.0.1 and a
// Player, the scripted model, decides each answer: a final text, a shell
// command (as the vendor's own shell tool call), an HTTP error as the
// vendor sends it, a hang, a delay or a slow stream.
//
// It speaks the Anthropic Messages API (POST /v1/messages, streaming SSE
// or JSON; /v1/messages/count_tokens; GET /v1/models; HEAD /api/hello,
// Claude Code's connectivity check) and the OpenAI Responses API (POST
// /v1/responses, SSE). Anything else gets a 404 in the vendor's form and
// is logged with Kind "unknown" in Requests, so a new endpoint shows up.
//
// Observed with Claude Code 2.1.328 and Codex CLI 0.169.0.
//
// # Claude Code
//
//	claude -p --output-format stream-json --verbose --allowedTools "Bash(git:*) Bash(touch:*)"
//
// with the prompt on stdin (ClaudeArgs) and the environment of ClaudeEnv:
// ANTHROPIC_BASE_URL=<URL()> (no /v1), ANTHROPIC_API_KEY=test-key,
// CLAUDE_CONFIG_DIR and HOME private, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
// (else it also sends HEAD /api/hello), DISABLE_AUTOUPDATER=1,
// DISABLE_TELEMETRY=1, DISABLE_ERROR_REPORTING=1, CLAUDE_CODE_MAX_RETRIES=1
// and CLAUDE_CODE_GATEWAY_HINT_HEADERS=1. Claude Code splits a compound
// command (a && b && c) and checks each part, so one Bash(cmd:*) rule per
// command, space-separated in one --allowedTools argument, allows
// "touch f && git add f && git commit -qm m"; a part no rule allows is
// denied (the tool result says it "needs approval", the result event lists
// it in permission_denials) and the run goes on. No config file is needed.
// It asks for /v1/messages?beta=true with model claude-opus-5-5 unless
// --model says otherwise, and falls back to the same request non-streaming
// (stream false) when a stream fails.
//
// Side requests. CLAUDE_CODE_GATEWAY_HINT_HEADERS=1 makes Claude Code label
// every request with x-claude-code-request-class: main, subagent, workflow,
// compaction, auxiliary or side_reply. Only "main" goes to the Player;
// without the header, a request offering no tools is taken for a side
// request (title, quota check, model validation, command checks all send
// none). Side requests get the text "{}". In -p runs of 2.1.328 none was
// seen: every request was labelled main.
//
// # Codex
//
//	codex exec --json --sandbox danger-full-access --skip-git-repo-check -
//
// with the prompt on stdin (CodexArgs), CODEX_HOME private and
// STANDIN_API_KEY=test-key (CodexEnv), and CODEX_HOME/config.toml
// (WriteCodexConfig):
//
//	model = "gpt-5.5"
//	model_provider = "standin"
//	[model_providers.standin]
//	name = "standin"
//	base_url = "<URL()>/v1"
//	wire_api = "responses"
//	env_key = "STANDIN_API_KEY"
//	request_max_retries = 1
//	stream_max_retries = 1
//
// gpt-5.5 is in the binary's model list; another model name works but
// adds an item.completed of type "error" ("Model metadata for ... not
// found") to the output. With CODEX_HOME under a temp directory Codex
// prints one line on stderr, "WARNING: proceeding, even though we could not
// create PATH aliases: ...", and goes on. 0.169.0 offers the shell as the
// function exec_command {"cmd": ...}, run as /bin/bash -lc <cmd>; the
// server also knows shell_command, shell and local_shell. The output comes
// back behind a header ("Chunk ID: ...\nOutput:\n"), which Turn.ToolResult
// leaves out. Codex sends no side requests in exec; a request offering no
// tools would be taken for one. turn.completed's usage sums the turn's
// requests.
//
// # Errors
//
// Exit codes and output, with the retry settings above (one retry; the
// 500 and 529 rows were seen with the defaults). Claude
// prints nothing on stderr; Codex only its PATH aliases warning. Claude's
// stream-json ends with {"type":"result","subtype":"success","is_error":true,
// "terminal_reason":"api_error","api_error_status":N,"api_error_type":T,
// "result":TEXT,"total_cost_usd":0,...} after an assistant event whose
// message has model "<synthetic>", the text TEXT and "error":E. Codex's
// --json ends with {"type":"error","message":M} and
// {"type":"turn.failed","error":{"message":M}}, after thread.started and
// turn.started.
//
//	error (Reply)          claude: exit, api_retry, E / T, TEXT                         codex: exit, events, M
//	429 RateLimit          1; {"type":"system","subtype":"api_retry","attempt":1,        1; {"type":"error","message":"Reconnecting... 1/1 (M)"} first;
//	 (retry-after,          "max_retries":1,"retry_delay_ms":<retry-after+jitter>,        M = "exceeded retry limit, last status: 429 Too Many Requests"
//	 *-reset headers)       "error_status":429,"error":"rate_limit"}; rate_limit /
//	                        rate_limit_error; "API Error: Request rejected (429) · <message>"
//	401 Unauthorized       1; api_retry with "error":"authentication_failed";           1; Reconnecting... 1/1 first; M = "unexpected status 401
//	                        authentication_failed / authentication_error;                Unauthorized: <message>, url: <URL()>/v1/responses"
//	                        "Invalid API key · Fix external API key"
//	404 NoModel            1; no api_retry (a second, non-streaming request);            1; no reconnect; M = "The model `gpt-5.5` does not exist or
//	                        model_not_found / not_found_error; "There's an issue with     you do not have access to it." (the body's message)
//	                        the selected model (claude-opus-5-5). It may not exist or
//	                        you may not have access to it. Run --model to pick a
//	                        different model."
//	429 UsageLimit         1; api_retry "error":"rate_limit"; rate_limit /               1; no reconnect; M = "You’ve hit your usage limit. Upgrade to
//	 (usage_limit_reached)  usage_limit_reached; "API Error: Request rejected (429) ·     Pro (https://chatgpt.com/explore/pro), visit
//	                        The usage limit has been reached"                            https://chatgpt.com/settings/usage to purchase more credits or
//	                                                                                      try again at 11:51 PM." (resets_at, local time)
//	429 Quota              1; api_retry "error":"rate_limit"; rate_limit /               1; no reconnect; M = "Quota exceeded. Check your plan and
//	 (insufficient_quota)   insufficient_quota; "API Error: Request rejected (429) ·     billing details."
//	                        You exceeded your current quota, please check your plan
//	                        and billing details."
//	500                    1; api_retry "error":"server_error"; "API Error: 500         1; Reconnecting... 1/1; M = "We’re currently experiencing high
//	                        <message>. This is a server-side issue, usually temporary    demand, which may cause temporary errors."
//	                        — try again in a moment. If it persists, check your
//	                        inference gateway (127.0.0.1:PORT)."
//	529                    1; api_retry "error":"overloaded"; "API Error: 529
//	                        Overloaded. This is a server-side issue, ..."
//
// Retries left at their defaults: Claude Code retries 429, 401, 500 and 529
// ten times ("max_retries":10), the delays doubling from about 0.5 s (the
// first 429 delay follows retry-after) to a cap of 32-40 s, so it gives up
// after about three minutes; CLAUDE_CODE_MAX_RETRIES=0 makes it give up
// after the first request. Codex reconnects five times ("Reconnecting...
// 1/5" to "5/5"): 10 s for a 429 or a 401, 30 s for a 500; its 404,
// usage-limit and quota errors are never retried.
package standin
