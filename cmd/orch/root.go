package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/answer"
	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/land"
	"github.com/orch-tool/orch/taskfile"
	"github.com/orch-tool/orch/workflow"
)

// streams are the process's standard files, and what we know about them.
type streams struct {
	In       io.Reader
	Out      io.Writer
	Err      io.Writer
	InTTY    bool
	OutTTY   bool
	NoColor  bool
	Progress bool
}

// globalOptions are the flags every verb takes.
type globalOptions struct {
	io          *streams
	Dir         string
	JSON        bool
	jsonNames   []string    // --json=FIELDS: the fields named (nil: --json alone)
	jq          string      // --jq EXPR
	fields      answer.Mask // the task fields --json=FIELDS names (0: all)
	Agent       string
	StateBranch string
	repo        *gitrepo.Repo // discovered once, in resolveAgent
	notes       []string      // notes held back under --json (see printNotes)
	agentSource string        // where Agent came from (--agent, ORCH_AGENT, ...)
	verb        string        // the command being run ("pr poll")
	longRunning bool          // opens the store again and again (board --watch)
	kind        verbKind      // how the command runs (runner.go)
	optimistic  bool          // a read or transition body is running: it may run twice
	stdinText   []byte        // what -F - (or another "-" input) read, kept if the command fails
	dryRun      bool          // a transition's --dry-run: it changes nothing, housekeeping included
}

// privDir is the repository's private state directory, "" outside a
// repository or before one was found.
func (g *globalOptions) privDir() string {
	if g.repo == nil {
		return ""
	}
	return filepath.Join(g.repo.CommonDir, "orch")
}

// Main runs orch with args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == coordinator.SupervisorCommand {
		// An agent's supervisor (orch run): no command line of orch's.
		return coordinator.SuperviseMain(args[1:])
	}
	defer startProfile()()
	if exe, err := os.Executable(); err == nil {
		// The checks landing runs end with orch, as its agents do.
		land.Supervisor = []string{exe, coordinator.SupervisorCommand}
	}
	workflow.DeleteLater = deleteDetached
	s := &streams{In: stdin, Out: stdout, Err: stderr}
	if f, ok := stdin.(*os.File); ok {
		s.InTTY = isTerminal(f)
	}
	if f, ok := stdout.(*os.File); ok {
		s.OutTTY = isTerminal(f)
	}
	if f, ok := stderr.(*os.File); ok {
		s.Progress = isTerminal(f) && os.Getenv("TERM") != "dumb"
	}
	_, s.NoColor = os.LookupEnv("NO_COLOR")
	if os.Getenv("TERM") == "dumb" {
		s.NoColor = true
	}
	g := &globalOptions{io: s}
	root := newRootCmd(g)
	args = jsonFieldsWithSpace(root, args)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if out, ok := g.io.Out.(*answer.Filter); ok && err == nil {
		err = out.Finish()
	}
	if err == nil {
		g.flushNotes()
		return 0
	}
	if !g.JSON {
		// A flag error stops parsing before --json is seen; the caller
		// still asked for the JSON envelope.
		for _, a := range args {
			if a == "--" {
				break
			}
			if jsonArg(a) {
				g.JSON = true
			}
		}
	}
	if h := fieldsAsArgument(args); h != "" && classify(err).exit == exitUsage {
		err = &hinted{err, h}
	}
	if len(g.stdinText) > 0 {
		// What came on stdin (feedback, a review, a refusal) exists nowhere
		// else: a failed command keeps it (docs/design.md §1.3).
		if p := gitstore.KeepText(g.privDir(), "stdin.txt", g.stdinText); p != "" {
			g.printNoteList([]string{"what you gave on stdin is saved in " + p})
		}
	}
	return reportError(g, err)
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "orch",
		Short: "A git-backed work queue for coding agents and their reviewers",
		Long: `orch turns a git repository into a work queue for coding agents and their reviewers.

Tasks are markdown files with YAML frontmatter, kept on the branch "orch" and
mirrored in .orchestrator/ of the main worktree. Agents claim a task, read its
prompt, work on its branch and submit; reviewers approve or reject with
feedback, and rejected work goes back out on the same branch. Every change is
one git commit. Run orch from any worktree of the repository.

Start with orch init, then orch new "a title" and orch run (README.md's Quick start).
orch help queues shows the queues and the verbs that move tasks between them,
orch help config every key of config.yaml, orch help exit-codes what each exit
code means.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       versionString(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			g.verb = strings.TrimPrefix(cmd.CommandPath(), "orch ")
			g.kind = kindOf(cmd)
			if err := g.setUpJSON(); err != nil {
				return err
			}
			return g.resolveAgent()
		},
	}
	root.SetVersionTemplate("orch {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVarP(&g.Dir, "dir", "C", ".", "run as if orch was started in `DIR`")
	pf.Var(jsonFlag{g}, "json", jsonFlagUsage)
	pf.Lookup("json").NoOptDefVal = "true"
	pf.StringVar(&g.jq, "jq", "", "filter the JSON answer with a jq `EXPR` (implies --json)")
	pf.StringVar(&g.Agent, "agent", "", "who is acting (env ORCH_AGENT; default: git user.name)")
	pf.StringVar(&g.StateBranch, "state-branch", "", "the branch that holds orch's state (env ORCH_STATE_BRANCH; default: orch)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &workflow.UsageError{Msg: err.Error(), Hint: "orch " + cmd.Name() + " --help shows the flags"}
	})
	// Each command and how it runs (runner.go).
	root.AddCommand(
		declare(kindInteractive, newInitCmd(g)),
		declare(kindTransition, newNewCmd(g)),
		declare(kindRead, newListCmd(g)),
		declare(kindRead, newBoardCmd(g)),
		declare(kindLong, newServeCmd(g)),
		declare(kindRead, newShowCmd(g)),
		declare(kindInteractive, newEditCmd(g)),
		declare(kindRead, newCheckCmd(g)),
		declare(kindRead, newLogCmd(g)),
		declare(kindNone, newVersionCmd(g)),
		declare(kindTransition, newClaimCmd(g)),
		declare(kindTransition, newSubmitCmd(g)),
		declare(kindTransition, newRejectCmd(g)),
		declare(kindTransition, newApproveCmd(g)),
		declare(kindTransition, newPauseCmd(g)),
		declare(kindTransition, newFailCmd(g)),
		declare(kindTransition, newEscalateCmd(g)),
		declare(kindTransition, newRequeueCmd(g)),
		declare(kindTransition, newReopenCmd(g)),
		declare(kindRead, newDiffCmd(g)),
		declare(kindRead, newPrimeCmd(g)),
		declare(kindInteractive, newSetupCmd(g)),
		declare(kindLong, newMCPCmd(g)),
		declare(kindTransition, newHeartbeatCmd(g)),
		declare(kindTransition, newUnlockCmd(g)),
		declare(kindTransition, newSweepCmd(g)),
		declare(kindTransition, newArchiveCmd(g)),
		declare(kindRead, newInboxCmd(g)),
		declare(kindRead, newPromptCmd(g)),
		declare(kindInteractive, newReviewCmd(g)),
		declare(kindTransition, newRespondCmd(g)),
		declare(kindTransition, newRefuseCmd(g)),
		declare(kindTransition, newDecideCmd(g)),
		declare(kindRead, newStatsCmd(g)),
		declare(kindNone, newPRCmd(g)), // poll and import declare theirs
		declare(kindRead, newWorktreeCmd(g)),
		declare(kindRemote, newSyncCmd(g)),
		declare(kindRemote, newLandCmd(g)),
		declare(kindRead, newDoctorCmd(g)),
		declare(kindRead, newInstructionsCmd(g)),
		declare(kindLong, newRunCmd(g)),
		declare(kindRead, newLogsCmd(g)),
	)
	root.AddCommand(helpTopics()...)
	addCompletions(g, root)
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(newHelpCmd(root))
	groupCommands(root)
	wrapHelp(root)
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			setupCompletion(g, c)
		}
	}
	return root
}

func (g *globalOptions) resolveAgent() error {
	if g.StateBranch == "" {
		g.StateBranch = os.Getenv("ORCH_STATE_BRANCH")
	}
	if sb := g.StateBranch; sb != "" && !taskfile.ValidBranch(strings.TrimPrefix(sb, "refs/heads/")) {
		return &workflow.UsageError{Msg: fmt.Sprintf("%q is not a valid name for the state branch", sb), Hint: "a branch name like orch or team/orch (--state-branch NAME or ORCH_STATE_BRANCH)"}
	}
	if env := os.Getenv("ORCH_AGENT"); env != "" && !taskfile.ValidName(env) {
		return &workflow.UsageError{Msg: fmt.Sprintf("ORCH_AGENT=%q is not a valid agent name", env), Hint: "names are letters, digits, spaces and . _ - + @, up to 64 characters"}
	}
	g.agentSource = "--agent"
	if g.Agent == "" {
		g.Agent, g.agentSource = os.Getenv("ORCH_AGENT"), "ORCH_AGENT"
	}
	if g.Agent == "" {
		if g.discover() != nil {
			g.Agent, g.agentSource = g.repo.GitConfig("user", "name"), "git user.name"
		}
	}
	if g.Agent == "" {
		if u, err := user.Current(); err == nil {
			g.Agent, g.agentSource = u.Username, "login"
		}
	}
	if g.Agent == "" {
		g.Agent, g.agentSource = "unknown", "none"
	}
	// An agent's name (--agent, ORCH_AGENT) keeps the strict rule; a
	// person's name from git may be anything git accepts as user.name.
	valid := taskfile.ValidName
	if g.agentSource == "git user.name" || g.agentSource == "login" {
		valid = taskfile.ValidPersonName
	}
	if !valid(g.Agent) {
		if g.agentSource == "git user.name" {
			return &workflow.UsageError{Msg: fmt.Sprintf("git user.name %q cannot name an actor: it holds control characters, < or >, or spaces at an end", g.Agent), Hint: "fix it with git config user.name, or pass --agent NAME"}
		}
		return &workflow.UsageError{Msg: fmt.Sprintf("%q is not a valid agent name", g.Agent), Hint: "names are letters, digits, spaces and . _ - + @, up to 64 characters (--agent NAME)"}
	}
	return nil
}

// discover finds the repository once per command (nil outside one; Open
// then reports the error).
func (g *globalOptions) discover() *gitrepo.Repo {
	if g.repo == nil {
		g.repo, _ = gitrepo.Discover(g.Dir)
	}
	return g.repo
}

// open opens the engine: lock, load, reconcile the view. Notes from the
// reconcile go to stderr.
func (g *globalOptions) open() (*workflow.Engine, error) {
	return workflow.Open(g.engineOptions(false))
}

// engineOptions are the options every command opens the engine with: the
// actor, and the signals it is judged by (docs/design.md §5.1).
func (g *globalOptions) engineOptions(optimistic bool) workflow.Options {
	sig := workflow.ActorSignals{Source: g.agentSource, EnvAgent: os.Getenv("ORCH_AGENT"), Terminal: g.io.InTTY}
	if r := g.discover(); r != nil && r.WorkTree != "" && r.WorkTree != r.MainWorkTree {
		sig.Worktree = r.WorkTree
	}
	return workflow.Options{Repo: g.discover(), Dir: g.Dir, StateBranch: g.StateBranch, Actor: g.Agent, Progress: g.progressFunc(),
		Optimistic: optimistic, Signals: sig, Verb: g.verb, ReadOnly: g.kind == kindRead || g.kind == kindNone, InMemoryCache: g.longRunning, Fence: runFence(),
		HoldPolicyEdits: g.verb == "run"}
}

// runFence is the run of orch run this process's agent belongs to, from
// the environment orch run gives it (docs/design.md §7.2): its verbs on that task
// are refused once the run has ended.
func runFence() *workflow.Fence {
	task, attempt := os.Getenv("ORCH_TASK"), os.Getenv("ORCH_ATTEMPT")
	n, err := strconv.Atoi(attempt)
	if task == "" || err != nil || os.Getenv("ORCH_AGENT") == "" {
		return nil
	}
	return &workflow.Fence{Task: task, Attempt: n, Reviewer: os.Getenv("ORCH_ROLE") == "reviewer"}
}

// close releases the engine and prints what the store did on our behalf.
func (g *globalOptions) close(e *workflow.Engine) error {
	err := e.Close()
	g.printNotes(e)
	return err
}

func (g *globalOptions) printNotes(e *workflow.Engine) {
	g.printNoteList(e.AllNotes())
}

// printNoteList prints notes (held back under --json).
func (g *globalOptions) printNoteList(notes []string) {
	if g.JSON {
		// With --json a failure's stderr is the error envelope alone
		// (docs/design.md §9): the notes wait for the outcome (see Main).
		g.notes = append(g.notes, notes...)
		return
	}
	for _, n := range notes {
		fmt.Fprintln(g.io.Err, "orch: "+n)
	}
}

// flushNotes prints the notes held back under --json.
func (g *globalOptions) flushNotes() {
	for _, n := range g.notes {
		fmt.Fprintln(g.io.Err, "orch: "+n)
	}
	g.notes = nil
}

// exactArgs and friends turn cobra's argument errors into usage errors.
func exactArgs(n int, form string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return &workflow.UsageError{Msg: fmt.Sprintf("orch %s takes %d argument(s), got %d", cmd.Name(), n, len(args)), Hint: "usage: orch " + form}
		}
		return nil
	}
}

func maxArgs(n int, form string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return &workflow.UsageError{Msg: fmt.Sprintf("orch %s takes at most %d argument(s), got %d", cmd.Name(), n, len(args)), Hint: "usage: orch " + form}
		}
		return nil
	}
}

var errSilent = errors.New("")
