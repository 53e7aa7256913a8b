package workflow

import (
	"errors"
	"testing"

	"github.com/orch-tool/orch/refusal"
)

// TestCheckRefusalIdentity: task_id must name the task refused (with or
// without the protocol's "task:"), agent_id the actor; absent fields agree.
func TestCheckRefusalIdentity(t *testing.T) {
	e := &Engine{Actor: "sub-agent-1", Kind: KindAgent}
	for _, r := range []*refusal.Record{nil, {}, {TaskID: "T-123abc"}, {TaskID: " task:T-123abc "}, {TaskID: "TASK:t-123ABC"}, {AgentID: "sub-agent-1"}, {HandoffID: "handoff:H-1", RejectedAt: "yesterday"}} {
		if err := e.CheckRefusalIdentity("T-123abc", r); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
	var ue *UsageError
	err := e.CheckRefusalIdentity("T-123abc", &refusal.Record{TaskID: "task:T-999zzz"})
	if !errors.As(err, &ue) || ue.Msg != `the refusal record's task_id is "task:T-999zzz", but this refuses T-123abc: the record is about another task` ||
		ue.Next.Advice != AdviseSetRecordTask || ue.Next.Task != "T-123abc" {
		t.Errorf("another task: %v (%+v)", err, ue)
	}
	for _, prefix := range []string{"task:", "T-123", "T-123abcd"} {
		if err := e.CheckRefusalIdentity("T-123abc", &refusal.Record{TaskID: prefix}); !errors.As(err, &ue) {
			t.Errorf("task_id %q: %v", prefix, err)
		}
	}
	var re *RuleError
	err = e.CheckRefusalIdentity("T-123abc", &refusal.Record{TaskID: "T-123abc", AgentID: "sub-agent-2"})
	if !errors.As(err, &re) || re.Rule != "record_identity" ||
		re.Msg != `the refusal record's agent_id is "sub-agent-2", but sub-agent-1 is refusing T-123abc: a record cannot speak for someone else` ||
		re.Next.Advice != AdviseSetRecordAgent || re.Next.Agent != "sub-agent-1" {
		t.Errorf("another agent: %v (%+v)", err, re)
	}
}

// blockerRefusal is a valid BLOCKER refusal (package refusal's tests hold
// the validator's rules).
func blockerRefusal() *refusal.Record {
	return &refusal.Record{
		ReasonType:    refusal.Blocker,
		ReasonSummary: "Staging auth API is down",
		ReasonDetail:  "Every call to the staging auth API fails.",
		WhatAttempted: []string{
			"Ran go test ./auth/... - 12 failures in session_test.go",
			"Searched the repository for the OAuth client configuration - not found",
		},
		BlockingFactor:       "The staging auth API returns 503 for every request",
		Evidence:             []refusal.Evidence{{Type: "error_log", Data: "ConnectionError: API endpoint returned 503", Source: "attempt to call auth API"}},
		SuggestedAlternative: "Have ops restart the staging auth service, then rerun the login tests",
	}
}
