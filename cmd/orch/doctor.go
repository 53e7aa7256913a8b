package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/doctor"
	"github.com/orch-tool/orch/internal/text"
	"github.com/orch-tool/orch/workflow"
)

type doctorOptions struct {
	g             *globalOptions
	Fix           bool
	RestoreTip    bool
	AcceptRewind  bool
	MigrateClaims bool
}

func newDoctorCmd(g *globalOptions) *cobra.Command {
	o := &doctorOptions{g: g}
	cmd := &cobra.Command{
		Use:   "doctor [--fix]",
		Short: "Find (and with --fix repair) what can go wrong with orch's state",
		Long: `Check orch's state in this repository without going through the normal path
(which takes the lock, trusts the cache and reconciles the view), so it works
when other commands fail:

  state_branch  the state branch exists and can be read; missing here but
                present on a remote (refs/remotes/REMOTE/orch)
  history       the state branch still contains the tip orch saw last (not
                reset, rewound or rewritten outside orch)
  objects       the tip's commit and trees can be read, every file's object is present
  stale_lock    <ref>.lock files of the state branch left by a killed process
  temp_files    temp files left in the view or in <git common dir>/orch/
  cache         the state cache decodes and matches the branch tip
  view          view files out of step with the branch (missing, extra,
                edited, older, or differing where the sync index says unchanged)
  conflicts     view files kept uncommitted after a conflict, with the command
                that resolves each
  checked_out   the state branch checked out in a worktree (orch refuses to write)
  exclude       /.orchestrator/ listed in .git/info/exclude
  private_files every file of <git common dir>/orch/ is a regular file
  claims        how claims across machines are decided (claim_arbiter) and
                the claim refs each remote had at the last fetch

Without --fix nothing changes. --fix removes stale locks and temp files,
creates a missing state branch from its remote-tracking copy (fetching it
when there is none), rebuilds an untrustworthy cache (keeping the view's sync
index), adds the exclude entry, and runs the reconcile every command runs. It
never picks a side in a conflict and never touches a worktree.

A state branch that moved backwards is for a person to settle, not --fix:
--restore-tip puts it back at the tip orch saw last (the dropped transitions
return); --accept-rewind keeps it where it is. Until then every other command
refuses to write. Neither is an agent's to run (ORCH_AGENT set: refused).

--migrate-claims moves a repository made before claim refs were the default
to repository format 2 (format: 2 and claim_arbiter: claim_ref in
config.yaml, the rest of the file kept): claims across machines are then won
on claim refs, and an orch that does not know format 2 refuses to write. A
human's decision, once every clone runs an orch that knows it; orch sync
shares it.

Prints one line per check: ok, problem or fixed. Exits 0 when every check is
ok (or fixed) and 1 when problems remain. With --json it prints the report
({"ok": ..., "count": N, "checks": [{"check", "status", "detail", "hint",
"items"}]}) and exits 0 whenever the checks ran: read "ok".`,
		Example: `  orch doctor
  orch doctor --fix
  orch doctor --restore-tip
  orch doctor --migrate-claims
  orch doctor --json`,
		Args: exactArgs(0, "doctor [--fix | --restore-tip | --accept-rewind]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runDoctor(o) },
	}
	cmd.Flags().BoolVar(&o.Fix, "fix", false, "repair what can be repaired")
	cmd.Flags().BoolVar(&o.RestoreTip, "restore-tip", false, "put a state branch that moved backwards back at the tip orch saw last")
	cmd.Flags().BoolVar(&o.AcceptRewind, "accept-rewind", false, "accept a state branch that moved backwards where it is")
	cmd.Flags().BoolVar(&o.MigrateClaims, "migrate-claims", false, "move the repository to format 2: claim refs decide claims across machines")
	cmd.MarkFlagsMutuallyExclusive("fix", "restore-tip", "accept-rewind", "migrate-claims")
	return cmd
}

// doctorAnswer is orch doctor's JSON answer.
type doctorAnswer struct {
	OK     bool           `json:"ok"`
	Count  int            `json:"count"`
	Checks []doctor.Check `json:"checks"`
}

func runDoctor(o *doctorOptions) error {
	g := o.g
	if (o.RestoreTip || o.AcceptRewind) && os.Getenv("ORCH_AGENT") != "" {
		return &workflow.RuleError{Rule: "authority", Msg: "restoring or accepting a rewound state branch is for a human, and ORCH_AGENT is set",
			Hint: "this is for a human: ask one with orch escalate ID -m \"what you need and why\""}
	}
	if o.MigrateClaims {
		err := g.runPrinting(func(e *workflow.Engine, out *output) error {
			res, err := e.MigrateClaims()
			if err != nil {
				return err
			}
			if res.Commit.IsZero() {
				fmt.Fprintln(g.io.Err, "orch: the repository is at format 2 with claim_arbiter claim_ref already")
			} else {
				fmt.Fprintf(g.io.Err, "orch: the repository is now at format 2, claim_arbiter claim_ref (commit %s); orch sync shares it with the other clones, whose orch must know format 2\n", res.Commit.String()[:7])
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	rep, err := doctor.Run(doctor.Options{Repo: g.discover(), Dir: g.Dir, StateBranch: g.StateBranch, Actor: g.Agent, Fix: o.Fix,
		RestoreTip: o.RestoreTip, AcceptRewind: o.AcceptRewind})
	if err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(g.io.Err, "orch: "+n)
	}
	problems := rep.Problems()
	if g.JSON {
		checks := rep.Checks
		if checks == nil {
			checks = []doctor.Check{}
		}
		for i := range checks {
			checks[i].Items = nonNil(checks[i].Items)
		}
		// The report is the answer, problems or not: ok says which.
		return g.out().writeJSON(doctorAnswer{rep.OK && problems == 0, len(checks), checks})
	}
	width := 0
	for _, c := range rep.Checks {
		width = max(width, len(c.Check))
	}
	fixed := 0
	for _, c := range rep.Checks {
		fmt.Fprintf(g.io.Out, "%-7s  %-*s  %s\n", c.Status, width, c.Check, text.OneLine(c.Detail))
		if c.Status == doctor.StatusFixed {
			fixed++
		}
	}
	for _, c := range rep.Checks {
		if c.Status == doctor.StatusProblem && c.Hint != "" {
			fmt.Fprintf(g.io.Err, "hint: %s: %s\n", c.Check, c.Hint)
		}
	}
	if problems > 0 {
		return &doctor.UnhealthyError{Problems: problems, Fixable: rep.Fixable(), Fixed: o.Fix}
	}
	switch {
	case fixed > 0:
		fmt.Fprintf(g.io.Err, "ok: fixed %d problem(s)\n", fixed)
	default:
		fmt.Fprintln(g.io.Err, "ok: no problems")
	}
	return nil
}
