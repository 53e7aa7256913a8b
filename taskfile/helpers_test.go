package taskfile

import (
	"strings"
	"testing"
)

// designExample is the task file of docs/design.md §3.
const designExample = `---
id: T-4k9x2m
title: Snap fork start like the other shapes
queue: rejected
priority: P1
role: implementer
branch: task/T-4k9x2m-snap-fork-start
pr_number: 48
rejection_count: 1
claimed_by: agent-b
locked_out: [agent-a]
depends_on: [T-2bq7za]
labels: [sketch]
created: 2026-02-06T10:00:00Z
custom_field: kept exactly as written   # unknown keys and comments survive every edit
---
# Snap fork start like the other shapes

## Review Feedback (rejection #1)

### From GitHub PR review by alice (2026-02-06T16:30:00Z)

- [ ] **R1.1** BLOCKING ` + "`src/components/SketchView2D.tsx:1709`" + `
  Fork start uses raw svgPos instead of snapResult. Should snap like polygon/rect/circle.
- [ ] **R1.2** suggestion ` + "`src/components/SketchView2D.tsx:1826`" + `
  Snap computation is duplicated 3 times in handleMouseMove. Compute once at the top.

### From lead via orch reject (2026-02-06T16:35:00Z)

Fix the 3 issues from code review. Do NOT create a new PR — push to existing branch.

## Context
...
## Acceptance Criteria
- [ ] ...
`

// mustParse parses src or fails the test.
func mustParse(t testing.TB, src string) *File {
	t.Helper()
	f, err := Parse("tasks/T-test.md", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v\n--- input:\n%s", err, src)
	}
	return f
}

// lines joins its arguments with "\n" and ends the text with one.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
