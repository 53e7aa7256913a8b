package main

import (
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/config"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// completeTaskIDs completes task IDs, with titles as descriptions, from the
// store's cache: no view reconcile, no commits, so a <TAB> never changes the
// repository.
func completeTaskIDs(g *globalOptions, queues ...taskfile.Queue) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		e, err := workflow.Open(workflow.Options{Dir: g.Dir, StateBranch: g.StateBranch, Actor: "completion", NoReconcile: true})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer e.Close()
		want := map[taskfile.Queue]bool{}
		for _, q := range queues {
			want[q] = true
		}
		var out []string
		for _, s := range e.Store.Summaries() {
			id := s.Task.ID
			if id == "" || (len(want) > 0 && !want[s.Task.Queue]) || !strings.HasPrefix(strings.ToLower(id), strings.ToLower(toComplete)) {
				continue
			}
			out = append(out, id+"\t"+string(s.Task.Queue)+": "+strings.ReplaceAll(s.Task.Title, "\t", " "))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeWords completes a fixed list (queues, decisions, statuses).
func completeWords(words ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return filterPrefix(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completionEngine opens the store for a completion, read-only (no
// reconcile, no commit); nil outside a repository where orch is set up.
func completionEngine(g *globalOptions) *workflow.Engine {
	e, err := workflow.Open(workflow.Options{Dir: g.Dir, StateBranch: g.StateBranch, Actor: "completion", NoReconcile: true})
	if err != nil {
		return nil
	}
	return e
}

// completeRoles completes role names: implementer and reviewer, then the
// config's default_role and the roster's roles.
func completeRoles(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, fromRepo := config.Default(), false
		if e := completionEngine(g); e != nil {
			if e.ConfigErr == nil && e.Config != nil {
				cfg, fromRepo = e.Config, true
			}
			_ = e.Close()
		}
		var out []string
		for _, r := range configRoles(cfg, fromRepo) {
			if strings.HasPrefix(r, toComplete) {
				out = append(out, r)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// agentNames lists the agents orch knows of, each with where it was seen:
// the roster (with its roles), review.reviewers, then the agents named in
// tasks (claimed_by, submitted_by, assigned_to, locked_out).
func agentNames(e *workflow.Engine) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name, desc string) {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		out = append(out, name+"\t"+desc)
	}
	if e.Config != nil {
		for _, a := range e.Config.Agents {
			add(a.Name, "roster: "+strings.Join(a.Roles, ", "))
		}
		for _, r := range e.Config.Review.Reviewers {
			desc := "reviewer"
			if r.Scoped() {
				desc += " of " + r.ScopeText()
			}
			add(r.Name, desc)
		}
	}
	var inTasks []string
	for _, s := range e.Store.Summaries() {
		t := s.Task
		inTasks = append(inTasks, t.ClaimedBy, t.SubmittedBy, t.AssignedTo)
		inTasks = append(inTasks, t.LockedOut...)
	}
	sort.Strings(inTasks)
	for _, n := range slices.Compact(inTasks) {
		add(n, "seen in tasks")
	}
	return out
}

// completeAgents completes agent names (see agentNames).
func completeAgents(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		e := completionEngine(g)
		if e == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer e.Close()
		return filterPrefix(agentNames(e), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeUnlock completes unlock's arguments: a task with a lockout, then
// the agents locked out of it (every agent orch knows of when the task has
// no lockout or is not found).
func completeUnlock(g *globalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	ids := completeTaskIDs(g)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return ids(cmd, args, toComplete)
		case 1:
			e := completionEngine(g)
			if e == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			defer e.Close()
			for _, s := range e.Store.Summaries() {
				if strings.EqualFold(s.Task.ID, args[0]) && len(s.Task.LockedOut) > 0 {
					var out []string
					for _, a := range s.Task.LockedOut {
						out = append(out, a+"\tlocked out of "+s.Task.ID)
					}
					return filterPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
				}
			}
			return filterPrefix(agentNames(e), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// filterPrefix keeps the completions ("value\tdescription") whose value
// starts with prefix.
func filterPrefix(cands []string, prefix string) []string {
	var out []string
	for _, c := range cands {
		if v, _, _ := strings.Cut(c, "\t"); strings.HasPrefix(v, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// addCompletions attaches completion functions to the verbs: task IDs,
// queue, role and agent names.
func addCompletions(g *globalOptions, root *cobra.Command) {
	queues := make([]string, len(taskfile.Queues))
	for i, q := range taskfile.Queues {
		queues[i] = string(q)
	}
	open := []taskfile.Queue{}
	_ = root.RegisterFlagCompletionFunc("agent", completeAgents(g))
	for _, c := range root.Commands() {
		switch c.Name() {
		case "show", "edit", "log", "prompt", "escalate", "fail", "respond", "archive":
			c.ValidArgsFunction = completeTaskIDs(g, open...)
		case "unlock":
			c.ValidArgsFunction = completeUnlock(g)
		case "submit", "pause", "refuse":
			c.ValidArgsFunction = completeTaskIDs(g, taskfile.Claimed)
		case "approve", "reject", "review":
			c.ValidArgsFunction = completeTaskIDs(g, taskfile.Provisional)
		case "decide":
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, tc string) ([]string, cobra.ShellCompDirective) {
				if len(args) == 1 {
					return workflow.Decisions, cobra.ShellCompDirectiveNoFileComp
				}
				return completeTaskIDs(g, taskfile.Blocked)(cmd, args, tc)
			}
		case "reopen":
			c.ValidArgsFunction = completeTaskIDs(g, taskfile.Failed)
		case "requeue":
			c.ValidArgsFunction = completeTaskIDs(g)
			_ = c.RegisterFlagCompletionFunc("to", completeAgents(g))
		case "list", "board":
			_ = c.RegisterFlagCompletionFunc("queue", completeWords(queues...))
		case "claim":
			_ = c.RegisterFlagCompletionFunc("task", completeTaskIDs(g, taskfile.Incoming, taskfile.Rejected, taskfile.NeedsContinuation))
		case "new":
			_ = c.RegisterFlagCompletionFunc("assign", completeAgents(g))
		}
		if c.Flags().Lookup("role") != nil {
			_ = c.RegisterFlagCompletionFunc("role", completeRoles(g))
		}
	}
}
