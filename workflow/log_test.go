package workflow

import (
	"strings"
	"testing"

	"github.com/orch-tool/orch/gitstore"
)

// TestLogNamesWhoLockedOutAndUnlocked: orch log's entries of a rejection
// and an unlock name the agent locked out and let back in; other entries
// name nobody.
func TestLogNamesWhoLockedOutAndUnlocked(t *testing.T) {
	dir, ids := scopeRepo(t, "base_branch: main\nagents:\n  - {name: agent-a, roles: [implementer]}\n  - {name: agent-b, roles: [implementer]}\n", map[string][]string{"API": nil})
	id := ids["API"]
	e := openAs(t, dir, "lead", false)
	if _, err := e.Reject(id, "agent-b is locked out of this task."); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Unlock(id, "agent-a"); err != nil {
		t.Fatal(err)
	}
	entries, err := e.Log(id, 0)
	e.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		got = append(got, en.Action+":"+en.LockedOut+":"+en.Unlocked)
	}
	if want := "unlock::agent-a reject:agent-a: submit:: claim:: new::"; strings.Join(got, " ") != want {
		t.Errorf("log %q, want %q", strings.Join(got, " "), want)
	}
}

func TestLockedOutBy(t *testing.T) {
	msg := func(body string, trailers ...string) string {
		return "orch(T-aaaaaa): provisional -> rejected\n\n" + body + "\n\nOrch-Task: T-aaaaaa\n" + strings.Join(trailers, "\n") + "\n"
	}
	for _, c := range []struct {
		name, msg, want string
	}{
		{"trailer", msg("Rejection #1 by lead: x\n\nagent-a is locked out of this task.", "Orch-Action: reject", "Orch-Round: 1", "Orch-Locked-Out: agent-a"), "agent-a"},
		{"old body", msg("Rejection #1 by lead: x\n\nagent-a is locked out of this task.", "Orch-Action: reject", "Orch-Round: 1"), "agent-a"},
		{"old body, escalated", msg("Rejection #3 by lead: x\n\nSeán O'Brien is locked out of this task.\n\nEscalated: Every agent with role implementer in the roster is locked out of this task (a, b).", "Orch-Action: review", "Orch-Round: 3"), "Seán O'Brien"},
		{"no lockout", msg("Rejection #2 by lead: x\n\nEscalated: Every agent with role implementer in the roster is locked out of this task (a, b).", "Orch-Action: reject", "Orch-Round: 2"), ""},
		{"reviewer's words", msg("Rejection #1 by lead: mallory is locked out of this task.", "Orch-Action: reject", "Orch-Round: 1"), ""},
		{"not a rejection", msg("Edited.\n\nagent-a is locked out of this task.", "Orch-Action: edit"), ""},
		{"an approval", msg("APPROVED by lead.\n\nagent-a is locked out of this task.", "Orch-Action: approve", "Orch-Round: 1"), ""},
	} {
		c.msg = strings.Replace(c.msg, "Orch-Task: T-aaaaaa\n", "Orch-Task: T-aaaaaa\nOrch-Actor: lead\n", 1)
		tr := gitstore.ParseTrailers(c.msg)
		if got := lockedOutBy(c.msg, tr); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
