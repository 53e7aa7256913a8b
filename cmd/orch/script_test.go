package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/orch-tool/orch/internal/repostate"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestMain lets the test binary act as the orch command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(inMemory{m}, map[string]func(){
		"orch": func() {
			tuneRuntime()
			if dir := os.Getenv("ORCH_TEST_SCHEMAS"); dir != "" {
				os.Exit(mainCheckingSchemas(dir, os.Args[1:]))
			}
			os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// inMemory runs the tests (not the orch a script runs: testscript.Main
// calls Run only in the parent) with their scratch repositories in memory
// where the machine allows (testgit.MemoryTempDir).
type inMemory struct{ m *testing.M }

func (w inMemory) Run() int {
	cleanup := testgit.MemoryTempDir()
	defer cleanup()
	return w.m.Run()
}

// TestScripts runs cmd/orch/testdata/script/*.txtar: the built binary
// driven the way an agent and a person drive it, against real repositories.
// Every JSON answer a script prints is checked against its schema
// (mainCheckingSchemas); when every script ran, every schema must have
// been checked against at least one real answer.
func TestScripts(t *testing.T) {
	p := scriptParams("testdata/script")
	seen := t.TempDir()
	var ran atomic.Int32
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		ran.Add(1)
		env.Setenv("ORCH_TEST_SCHEMAS_SEEN", seen)
		return setup(env)
	}
	t.Cleanup(func() { // after every script (they run in parallel)
		scripts, _ := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
		if t.Failed() || int(ran.Load()) < len(scripts) {
			return // a failed run, or a run of some scripts only
		}
		for _, name := range schemaNames() {
			if _, err := os.Stat(filepath.Join(seen, name)); err != nil {
				t.Errorf("no script prints an answer that docs/schema/%s.json checks (run a command with --json in a script)", name)
			}
		}
	})
	testscript.Run(t, p)
}

func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: false,
		UpdateScripts:       os.Getenv("ORCH_UPDATE_SCRIPTS") == "1", // rewrite cmp golden files in place
		Setup: func(env *testscript.Env) error {
			vars, err := testgit.Home(filepath.Join(env.WorkDir, ".home"), "tester", "tester@example.com")
			if err != nil {
				return err
			}
			for _, kv := range vars {
				k, v, _ := strings.Cut(kv, "=")
				env.Setenv(k, v)
			}
			env.Setenv("NO_COLOR", "1")
			env.Setenv("TERM", "dumb")
			env.Setenv("EDITOR", "")
			env.Setenv("VISUAL", "")
			env.Setenv("ORCH_AGENT", "")
			// Every answer of every script is checked against its schema.
			schemas, err := filepath.Abs(schemaDir)
			if err != nil {
				return err
			}
			env.Setenv("ORCH_TEST_SCHEMAS", schemas)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"repo-snapshot":  cmdRepoSnapshot,
			"repo-unchanged": cmdRepoUnchanged,
			"stdout-env":     cmdStdoutEnv,
			"json-env":       cmdJSONEnv,
			"json-is":        cmdJSONIs,
			"exits":          cmdExits,
			"json-doc":       cmdJSONDoc,
			"json-error":     cmdJSONError,
			"json-file":      cmdJSONFile,
			"git-state-edit": cmdGitStateEdit,
			"task-commit":    cmdTaskCommit,
			"free-port":      cmdFreePort,
			"http-get":       cmdHTTPGet,
		},
	}
}

// repoState is everything a refused command must leave alone: every ref,
// and every file of the worktree and the view (not .git internals, which
// include caches orch may rebuild).
func repoState(ts *testscript.TestScript, dir string) map[string]string {
	state := map[string]string{}
	cmd := exec.Command("git", "for-each-ref", "--format=%(refname) %(objectname)")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("git for-each-ref in %s: %v", dir, err)
	}
	state["refs"] = string(out)
	bare := exec.Command("git", "rev-parse", "--is-bare-repository")
	bare.Dir = dir
	if out, err := bare.Output(); err == nil && strings.TrimSpace(string(out)) == "true" {
		return state // a bare repository has no worktree and no view
	}
	_ = repostate.AddFiles(state, dir) // what cannot be read cannot change either
	return state
}

var snapshots = map[string]map[string]string{}

// repo-snapshot NAME [DIR]: remember the refs and files of the repository
// in DIR (default: the current directory).
func cmdRepoSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: repo-snapshot NAME [DIR]")
	}
	dir := ts.MkAbs(".")
	if len(args) == 2 {
		dir = ts.MkAbs(args[1])
	}
	snapshots[ts.Getenv("WORK")+"\x00"+args[0]] = repoState(ts, dir)
}

// repo-unchanged NAME [DIR]: the refs and files equal the snapshot.
func cmdRepoUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: repo-unchanged NAME [DIR]")
	}
	dir := ts.MkAbs(".")
	if len(args) == 2 {
		dir = ts.MkAbs(args[1])
	}
	before, ok := snapshots[ts.Getenv("WORK")+"\x00"+args[0]]
	if !ok {
		ts.Fatalf("no snapshot %s", args[0])
	}
	diffs := repostate.Diff(before, repoState(ts, dir))
	if neg {
		if len(diffs) == 0 {
			ts.Fatalf("repository unchanged, but a change was expected")
		}
		return
	}
	if len(diffs) > 0 {
		ts.Fatalf("repository changed:\n%s", strings.Join(diffs, "\n"))
	}
}

// stdout-env VAR: set VAR to the trimmed stdout of the last command.
// git-state-edit PATH OLD NEW: a git user (not orch, not a hand edit in the
// view) replaces the first OLD with NEW in PATH on the state branch, with
// git's own plumbing and a private index. Tests use it to set up states no
// orch verb makes, such as a task blocked without a refusal.
func cmdGitStateEdit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: git-state-edit PATH OLD NEW")
	}
	dir := ts.MkAbs(".")
	index := filepath.Join(ts.MkAbs("."), ".git", "orch-test-index")
	defer os.Remove(index)
	git := func(stdin string, a ...string) string {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "HOME="+ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			ts.Fatalf("git %v: %v", a, err)
		}
		return strings.TrimSpace(string(out))
	}
	cur := git("", "show", "orch:"+args[0])
	if !strings.Contains(cur, args[1]) {
		ts.Fatalf("orch:%s does not hold %q", args[0], args[1])
	}
	blob := git(strings.Replace(cur, args[1], args[2], 1)+"\n", "hash-object", "-w", "--stdin")
	git("", "read-tree", "orch")
	git("", "update-index", "--cacheinfo", "100644,"+blob+","+args[0])
	tree := git("", "write-tree")
	commit := git("", "commit-tree", "-p", "orch", "-m", "edit "+args[0]+" with git", tree)
	git("", "update-ref", "refs/heads/orch", commit)
}

// cmdTaskCommit commits a file on a task's branch, as an agent's work would
// be, without a worktree (git's plumbing, in the repository the script is
// in): task-commit ID [FILE]. The task's branch comes from its file in the
// view. A submit needs work on the branch.
func cmdTaskCommit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: task-commit ID [FILE]")
	}
	dir := ts.MkAbs(".")
	git := func(stdin string, a ...string) string {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			ts.Fatalf("git %v: %v", a, err)
		}
		return strings.TrimSpace(string(out))
	}
	common := git("", "rev-parse", "--git-common-dir")
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	view := filepath.Join(filepath.Dir(filepath.Clean(common)), ".orchestrator", "tasks")
	matches, _ := filepath.Glob(filepath.Join(view, args[0]+"-*.md"))
	if len(matches) != 1 {
		ts.Fatalf("no task file %s-*.md in %s", args[0], view)
	}
	branch := ""
	for _, l := range strings.Split(ts.ReadFile(matches[0]), "\n") {
		if v, ok := strings.CutPrefix(l, "branch: "); ok {
			branch = strings.TrimSpace(v)
		}
	}
	if branch == "" {
		ts.Fatalf("%s has no branch", args[0])
	}
	tip := git("", "rev-parse", "refs/heads/"+branch)
	name := "work-" + args[0] + ".txt"
	if len(args) == 2 {
		name = args[1]
	}
	prev := git("", "log", "-1", "--format=%s", tip)
	blob := git(args[0]+" "+prev+"\n", "hash-object", "-w", "--stdin")
	index := filepath.Join(common, "orch-test-index")
	defer os.Remove(index)
	gi := func(a ...string) string {
		cmd := exec.Command("git", a...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index, "HOME="+ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			ts.Fatalf("git %v: %v", a, err)
		}
		return strings.TrimSpace(string(out))
	}
	gi("read-tree", tip)
	gi("update-index", "--add", "--cacheinfo", "100644,"+blob+","+name)
	tree := gi("write-tree")
	commit := git("", "commit-tree", "-p", tip, "-m", "work on "+args[0], tree)
	git("", "update-ref", "refs/heads/"+branch, commit, tip)
}

func cmdStdoutEnv(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: stdout-env VAR")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

func jsonPath(ts *testscript.TestScript, doc any, path string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		if part == "" {
			continue
		}
		switch v := cur.(type) {
		case map[string]any:
			var ok bool
			if cur, ok = v[part]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func readJSON(ts *testscript.TestScript, file string) any {
	var doc any
	dec := json.NewDecoder(bytes.NewReader([]byte(ts.ReadFile(file))))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s is not JSON: %v", file, err)
	}
	return doc
}

func jsonText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// json-env VAR PATH [FILE]: set VAR to the value at PATH (like .tasks.0.id)
// of the JSON in FILE (default stdout).
func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: json-env VAR PATH [FILE]")
	}
	file := "stdout"
	if len(args) == 3 {
		file = args[2]
	}
	v, ok := jsonPath(ts, readJSON(ts, file), args[1])
	if !ok {
		ts.Fatalf("%s: no %s", file, args[1])
	}
	ts.Setenv(args[0], jsonText(v))
}

// json-is PATH VALUE [FILE]: the value at PATH, as text, equals VALUE.
func cmdJSONIs(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: json-is PATH VALUE [FILE]")
	}
	file := "stdout"
	if len(args) == 3 {
		file = args[2]
	}
	v, ok := jsonPath(ts, readJSON(ts, file), args[0])
	got := "<missing>"
	if ok {
		got = jsonText(v)
	}
	if (got == args[1]) == neg {
		ts.Fatalf("%s %s: got %s, want %s%s", file, args[0], got, map[bool]string{true: "not ", false: ""}[neg], args[1])
	}
}

// exits N PROG ARGS...: run PROG and require exit status N (its stdout and
// stderr are then matched by stdout/stderr as usual).
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if (got == want) == neg {
		ts.Fatalf("%s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", args[1], got, want, ts.ReadFile("stdout"), ts.ReadFile("stderr"))
	}
}

// oneJSONDoc parses text as exactly one JSON object followed by at most
// white space, and returns it.
func oneJSONDoc(ts *testscript.TestScript, name, text string) map[string]any {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s is not one JSON object: %v\n%s", name, err, text)
	}
	if rest := strings.TrimSpace(text[dec.InputOffset():]); rest != "" {
		ts.Fatalf("%s holds more than one JSON document; after the first: %q", name, rest)
	}
	return doc
}

// json-file PATH FILE: write the value at PATH of the JSON on stdout (as
// text, like json-env) to FILE, for cmp against multi-line expectations.
func cmdJSONFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: json-file PATH FILE")
	}
	v, ok := jsonPath(ts, readJSON(ts, "stdout"), args[0])
	if !ok {
		ts.Fatalf("stdout: no %s", args[0])
	}
	if err := os.WriteFile(ts.MkAbs(args[1]), []byte(jsonText(v)), 0o666); err != nil {
		ts.Fatalf("%v", err)
	}
}

// json-doc: stdout holds exactly one JSON object, starting with
// "schema_version":2 (docs/design.md §9).
func cmdJSONDoc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: json-doc")
	}
	out := ts.ReadFile("stdout")
	oneJSONDoc(ts, "stdout", out)
	if !strings.HasPrefix(out, `{"schema_version":2,`) && out != "{\"schema_version\":2}\n" {
		ts.Fatalf("stdout does not start with {\"schema_version\":2: %.80s", out)
	}
}

// json-error CODE: the last command failed the --json way: stdout empty,
// stderr exactly {"schema_version":2,"error":{"code":CODE,"message":...,"hint":...,"details":[...],"notes":[...]}}
// with a non-empty message, details (the parts of an error that has
// several) and notes (what the reconcile did on the way) lists of strings.
func cmdJSONError(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: json-error CODE")
	}
	if out := ts.ReadFile("stdout"); out != "" {
		ts.Fatalf("stdout is not empty: %q", out)
	}
	text := ts.ReadFile("stderr")
	doc := oneJSONDoc(ts, "stderr", text)
	if !strings.HasPrefix(text, `{"schema_version":2,"error":{"code":`) {
		ts.Fatalf("stderr does not start with {\"schema_version\":2,\"error\":{\"code\":: %.80s", text)
	}
	if len(doc) != 2 {
		ts.Fatalf("stderr has keys other than schema_version and error: %s", text)
	}
	e, ok := doc["error"].(map[string]any)
	if !ok || len(e) != 5 {
		ts.Fatalf("error is not {code, message, hint, details, notes}: %s", text)
	}
	for _, k := range []string{"details", "notes"} {
		l, isList := e[k].([]any)
		if !isList {
			ts.Fatalf("error %s is not a list: %s", k, text)
		}
		for _, n := range l {
			if _, isStr := n.(string); !isStr {
				ts.Fatalf("error %s holds a non-string: %s", k, text)
			}
		}
	}
	if e["code"] != args[0] {
		ts.Fatalf("error code is %v, want %s", e["code"], args[0])
	}
	if m, _ := e["message"].(string); m == "" {
		ts.Fatalf("error message is empty: %s", text)
	}
	if _, ok := e["hint"].(string); !ok {
		ts.Fatalf("error hint is not a string: %s", text)
	}
}

var _ = fmt.Sprintf
