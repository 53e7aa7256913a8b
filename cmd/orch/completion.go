package main

import (
	"strings"

	"github.com/spf13/cobra"

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
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}

// addCompletions attaches completion functions to the verbs.
func addCompletions(g *globalOptions, root *cobra.Command) {
	queues := make([]string, len(taskfile.Queues))
	for i, q := range taskfile.Queues {
		queues[i] = string(q)
	}
	open := []taskfile.Queue{}
	for _, c := range root.Commands() {
		switch c.Name() {
		case "show", "edit", "log", "prompt", "escalate", "fail", "unlock", "respond", "archive":
			c.ValidArgsFunction = completeTaskIDs(g, open...)
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
		case "requeue":
			c.ValidArgsFunction = completeTaskIDs(g)
		case "list":
			_ = c.RegisterFlagCompletionFunc("queue", completeWords(queues...))
		case "claim":
			_ = c.RegisterFlagCompletionFunc("task", completeTaskIDs(g, taskfile.Incoming, taskfile.Rejected, taskfile.NeedsContinuation))
		}
	}
}
