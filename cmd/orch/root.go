package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orch-tool/orch/coordinator"
	"github.com/orch-tool/orch/gitstore"
	"github.com/orch-tool/orch/gitstore/gitrepo"
	"github.com/orch-tool/orch/internal/answer"
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
	stdinText   []byte        // what -F - (or another "-" input) read, kept if the command fails
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
		// else: a failed command keeps it (DESIGN §2).
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

Queues and the verbs that move tasks between them:

` + indent(workflow.TransitionTable(), "  ") + `
Exit codes: 0 ok, 1 failure, 2 usage, 3 not found or nothing to claim,
4 refused by a rule, 5 conflict.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       versionString(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			g.verb = strings.TrimPrefix(cmd.CommandPath(), "orch ")
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
	root.AddCommand(
		newInitCmd(g),
		newNewCmd(g),
		newListCmd(g),
		newBoardCmd(g),
		newServeCmd(g),
		newShowCmd(g),
		newEditCmd(g),
		newCheckCmd(g),
		newLogCmd(g),
		newVersionCmd(g),
		newClaimCmd(g),
		newSubmitCmd(g),
		newRejectCmd(g),
		newApproveCmd(g),
		newPauseCmd(g),
		newFailCmd(g),
		newEscalateCmd(g),
		newRequeueCmd(g),
		newReopenCmd(g),
		newDiffCmd(g),
		newPrimeCmd(g),
		newSetupCmd(g),
		newMCPCmd(g),
		newHeartbeatCmd(g),
		newUnlockCmd(g),
		newSweepCmd(g),
		newArchiveCmd(g),
		newInboxCmd(g),
		newPromptCmd(g),
		newReviewCmd(g),
		newRespondCmd(g),
		newRefuseCmd(g),
		newDecideCmd(g),
		newStatsCmd(g),
		newPRCmd(g),
		newWorktreeCmd(g),
		newSyncCmd(g),
		newDoctorCmd(g),
		newInstructionsCmd(g),
		newRunCmd(g),
		newLogsCmd(g),
	)
	addCompletions(g, root)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			setupCompletion(g, c)
		}
	}
	return root
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n") + "\n"
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

// readOnlyVerbs change nothing on the state branch (beyond the reconcile
// every command runs), so the rule of a claimed task's worktree does not
// bind them (DESIGN §4a).
var readOnlyVerbs = map[string]bool{
	"list": true, "show": true, "diff": true, "prime": true, "prompt": true, "log": true, "stats": true, "inbox": true, "board": true,
	"check": true, "instructions": true, "version": true, "worktree": true, "doctor": true,
}

// engineOptions are the options every command opens the engine with: the
// actor, and the signals it is judged by (DESIGN §4a).
func (g *globalOptions) engineOptions(optimistic bool) workflow.Options {
	sig := workflow.ActorSignals{Source: g.agentSource, EnvAgent: os.Getenv("ORCH_AGENT"), Terminal: g.io.InTTY}
	if r := g.discover(); r != nil && r.WorkTree != "" && r.WorkTree != r.MainWorkTree {
		sig.Worktree = r.WorkTree
	}
	verb, _, _ := strings.Cut(g.verb, " ")
	return workflow.Options{Repo: g.discover(), Dir: g.Dir, StateBranch: g.StateBranch, Actor: g.Agent, Progress: g.progressFunc(),
		Optimistic: optimistic, Signals: sig, Verb: g.verb, ReadOnly: readOnlyVerbs[verb], InMemoryCache: g.longRunning, Fence: runFence()}
}

// runFence is the run of orch run this process's agent belongs to, from
// the environment orch run gives it (DESIGN §12): its verbs on that task
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
		// (DESIGN §9): the notes wait for the outcome (see Main).
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

// withEngineDeferred runs fn while the view is still being scanned, on the
// branch as it is (see gitstore.Store.Defer): fn does the verb's work and
// returns the function that prints its answer. When the reconcile, settled
// at fn's first commit or after fn, finds a hand edit (or a broken or
// conflicted file), fn's answer is dropped and fn runs again on the
// reconciled state, so the answer printed is the one a reconcile-first run
// gives. Verbs that read stdin inside fn, open an editor or talk to a
// remote must not use it.
func (g *globalOptions) withEngineDeferred(fn func(e *workflow.Engine) (func() error, error)) error {
	e, err := workflow.Open(g.engineOptions(true))
	if err != nil {
		return err
	}
	print, ferr := fn(e)
	ferr = e.ForActor(ferr)
	serr := e.Settle()
	if errors.Is(ferr, gitstore.ErrViewChanged) || errors.Is(serr, gitstore.ErrViewChanged) {
		e.ViewChanged()
		print, ferr = fn(e)
		ferr = e.ForActor(ferr)
	} else if ferr == nil {
		ferr = serr
	}
	if print != nil {
		if perr := print(); ferr == nil {
			ferr = perr
		}
	}
	cerr := g.close(e)
	if ferr != nil {
		return ferr
	}
	return cerr
}

// withEngineOptimistic is withEngineDeferred for verbs that print as they
// go: their output is held back until the reconcile has settled.
func (g *globalOptions) withEngineOptimistic(fn func(e *workflow.Engine) error) error {
	return g.withEngineDeferred(func(e *workflow.Engine) (func() error, error) {
		out, errOut := g.io.Out, g.io.Err
		var heldOut, heldErr bytes.Buffer
		g.io.Out, g.io.Err = &heldOut, &heldErr
		err := fn(e)
		g.io.Out, g.io.Err = out, errOut
		return func() error {
			_, _ = errOut.Write(heldErr.Bytes())
			_, err := out.Write(heldOut.Bytes())
			return err
		}, err
	})
}

// withEngine runs fn with an open engine and always closes it.
func (g *globalOptions) withEngine(fn func(e *workflow.Engine) error) error {
	e, err := g.open()
	if err != nil {
		return err
	}
	ferr := e.ForActor(fn(e))
	cerr := g.close(e)
	if ferr != nil {
		return ferr
	}
	return cerr
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
