package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/orch-tool/orch/refusal"
	"github.com/rogpeppe/go-internal/txtar"
)

// The examples in the help are commands that run in CI: every visible
// command has an Example, and every orch invocation in it appears in a
// testscript under testdata/script as `exec orch ...`, `orch ...`,
// `! exec orch ...` or `exits N orch ...` (conditions like [exec:bash] in
// front are allowed, and a background marker, & or &name&, at the end).
//
// How an example line is read: "\" continuations are joined and a trailing
// "# comment" is dropped; the orch invocation is the part that starts with
// the word orch at a command position (the start of the line, after
// VAR=value assignments, or after |, ;, &&, $( or <( ) and ends at an
// unquoted |, ;, &, >, < or ). It is split into words with the shell's
// quoting rules; the script line with testscript's (single quotes only).
//
// How words are compared, one by one (same number of words):
//   - equal words match;
//   - a $NAME or ${NAME} in a script word stands for any text (the script
//     supplies at run time what the example writes literally: an ID, a
//     commit, a path), so "$ID" matches "T-4k9x2m" and "$WORK/wt" matches
//     "/tmp/wt";
//   - an example word in angle brackets, like <id>, matches any word;
//   - an example task ID (T- and six lowercase letters or digits, like
//     T-4k9x2m) matches any task ID of that form.
//
// Environment assignments in front of orch (EDITOR=nano orch edit ...) are
// not compared: a script sets them with env.

// exampleInvocations returns the orch invocations of an Example, each as
// the example text and its words.
func exampleInvocations(example string) (texts []string, words [][]string) {
	for _, line := range exampleLines(dedent(example)) {
		for _, start := range orchStarts(line) {
			w, end := shellWords(line[start:])
			if len(w) == 0 {
				continue
			}
			texts = append(texts, strings.TrimSpace(line[start:start+end]))
			words = append(words, w)
		}
	}
	return texts, words
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*$`)

// orchStarts lists where orch starts a command in line.
func orchStarts(line string) []int {
	var out []int
	for i := 0; i+4 <= len(line); i++ {
		if line[i:i+4] != "orch" || (i+4 < len(line) && line[i+4] != ' ') {
			continue
		}
		before := strings.TrimRight(line[:i], " ")
		ok := before == ""
		for _, sep := range []string{"|", ";", "&&", "$(", "<("} {
			if strings.HasSuffix(before, sep) {
				ok = true
			}
		}
		if !ok {
			ok = true
			for _, f := range strings.Fields(before) {
				if !assignRE.MatchString(f) {
					ok = false
				}
			}
		}
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// shellWords splits s into words with the shell's quoting, up to the end of
// the command; it returns the words and where the command ended.
func shellWords(s string) ([]string, int) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case strings.IndexByte("|;&><)", c) >= 0:
			flush()
			return words, i
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				continue
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
		i++
	}
	flush()
	return words, len(s)
}

// scriptWords splits a testscript line into words: single quotes only, ”
// inside them is a quote.
func scriptWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'' && i+1 < len(line) && line[i+1] == '\'':
			cur.WriteByte('\'')
			i++
		case c == '\'':
			quoted = !quoted
			inWord = true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
			}
			cur.Reset()
			inWord = false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// scriptOrchCommands returns the orch invocations of a script (the words
// after orch, with orch first), with their file and line.
func scriptOrchCommands(t *testing.T) (cmds [][]string, where []string) {
	files, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(ar.Comment), "\n") {
			w := scriptWords(strings.TrimSpace(line))
			for len(w) > 0 && strings.HasPrefix(w[0], "[") && strings.HasSuffix(w[0], "]") {
				w = w[1:]
			}
			if len(w) > 0 && (w[0] == "!" || w[0] == "?") {
				w = w[1:]
			}
			switch {
			case len(w) > 0 && w[0] == "exec":
				w = w[1:]
			case len(w) > 1 && w[0] == "exits":
				w = w[2:]
			}
			if n := len(w); n > 0 && strings.HasPrefix(w[n-1], "&") && strings.HasSuffix(w[n-1], "&") {
				w = w[:n-1] // run in the background: & or &name&
			}
			if len(w) > 0 && w[0] == "orch" {
				cmds = append(cmds, w)
				where = append(where, filepath.Base(f)+":"+strconv.Itoa(n+1))
			}
		}
	}
	return cmds, where
}

var (
	scriptVarRE  = regexp.MustCompile(`\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)`)
	exampleIDRE  = regexp.MustCompile(`^T-[0-9a-z]{6}$`)
	placeholdRE  = regexp.MustCompile(`^<[^<>]+>$`)
	wordPatterns = map[string]*regexp.Regexp{}
)

// wordMatches applies the rules of the comment at the top of this file.
func wordMatches(example, script string) bool {
	if example == script || placeholdRE.MatchString(example) {
		return true
	}
	if exampleIDRE.MatchString(example) && exampleIDRE.MatchString(script) {
		return true
	}
	if !strings.Contains(script, "$") {
		return false
	}
	re, ok := wordPatterns[script]
	if !ok {
		var b strings.Builder
		b.WriteString("^")
		last := 0
		for _, m := range scriptVarRE.FindAllStringIndex(script, -1) {
			b.WriteString(regexp.QuoteMeta(script[last:m[0]]) + ".+")
			last = m[1]
		}
		b.WriteString(regexp.QuoteMeta(script[last:]) + "$")
		re = regexp.MustCompile(b.String())
		wordPatterns[script] = re
	}
	return re.MatchString(example)
}

func invocationMatches(example, script []string) bool {
	if len(example) != len(script) {
		return false
	}
	for i := range example {
		if !wordMatches(example[i], script[i]) {
			return false
		}
	}
	return true
}

// TestExamplesRunInScripts: every visible command has an Example, and every
// orch invocation of it runs in a testscript.
func TestExamplesRunInScripts(t *testing.T) {
	g := &globalOptions{io: &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}}
	root := newRootCmd(g)
	scripts, _ := scriptOrchCommands(t)
	var missing []string
	for _, c := range visibleCommands(root) {
		path := c.CommandPath()
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Example", path)
			continue
		}
		texts, words := exampleInvocations(c.Example)
		if len(words) == 0 {
			t.Errorf("%s: its Example runs no orch command:\n%s", path, c.Example)
			continue
		}
		for i, w := range words {
			found := false
			for _, s := range scripts {
				if invocationMatches(w, s) {
					found = true
					break
				}
			}
			if !found {
				missing = append(missing, path+": "+texts[i])
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("example not run by any testdata/script/*.txtar (add it, e.g. to an examples_*.txtar): %s", m)
	}
}

// TestExampleParsing pins the reading rules on the awkward shapes.
func TestExampleParsing(t *testing.T) {
	for _, c := range []struct {
		ex   string
		want []string
	}{
		{`  orch list --queue rejected --queue provisional`, []string{"orch list --queue rejected --queue provisional"}},
		{`  EDITOR=nano orch edit 4k9x`, []string{"orch edit 4k9x"}},
		{`  echo "details" | orch new "Write the migration" -F -`, []string{`orch new "Write the migration" -F -`}},
		{`  cd "$(orch worktree T-4k9x2m)"`, []string{"orch worktree T-4k9x2m"}},
		{`  source <(orch completion bash)`, []string{"orch completion bash"}},
		{`  orch instructions > AGENTS.md`, []string{"orch instructions"}},
		{`  orch prompt            # inside the task's worktree`, []string{"orch prompt"}},
		{"  orch refuse --reason BLOCKER \\\n    --summary 'a b'", []string{"orch refuse --reason BLOCKER --summary 'a b'"}},
		{`  gh api repos/acme/app/pulls/48/reviews > reviews.json`, nil},
	} {
		texts, _ := exampleInvocations(c.ex)
		if strings.Join(texts, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("exampleInvocations(%q) = %q, want %q", c.ex, texts, c.want)
		}
	}
	_, w := exampleInvocations(`  orch new "Fix the login redirect" --label 'a b' it\'s`)
	if got := strings.Join(w[0], "|"); got != "orch|new|Fix the login redirect|--label|a b|it's" {
		t.Errorf("shell words: %q", got)
	}
	if got := strings.Join(scriptWords(`exec orch new 'Fix the login redirect' 'it''s' $ID`), "|"); got != "exec|orch|new|Fix the login redirect|it's|$ID" {
		t.Errorf("script words: %q", got)
	}
	for _, c := range []struct {
		ex, script string
		want       bool
	}{
		{"T-4k9x2m", "T-4k9x2m", true},
		{"T-4k9x2m", "$ID", true},
		{"T-4k9x2m", "T-3pf3j8", true},
		{"4k9x", "T-3pf3j8", false},
		{"/tmp/wt", "$WORK/wt", true},
		{"/tmp/wt", "$WORK/other", false},
		{"<id>", "anything", true},
		{"--json", "--jsonx", false},
	} {
		if got := wordMatches(c.ex, c.script); got != c.want {
			t.Errorf("wordMatches(%q, %q) = %v, want %v", c.ex, c.script, got, c.want)
		}
	}
}

// TestInstructionsCoverData: the instructions have advice for every exit
// code and every refusal reason, so a new one cannot be left out.
func TestInstructionsCoverData(t *testing.T) {
	for _, c := range exitCodes {
		if exitAdvice[c.Code] == "" {
			t.Errorf("exit code %d has no advice in exitAdvice (instructions.go)", c.Code)
		}
	}
	for _, r := range refusal.Reasons() {
		if refusalAdvice[r] == "" {
			t.Errorf("refusal reason %s has no advice in refusalAdvice (instructions.go)", r)
		}
	}
	g := &globalOptions{io: &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}}
	root := newRootCmd(g)
	for role, verbs := range instructionVerbs {
		for _, v := range verbs {
			if d := verbData(root, v); d.Usage == "" || d.Short == "" || d.Example == "" {
				t.Errorf("instructions of %s: verb %s has no usage, description or example: %+v", role, v, d)
			}
		}
	}
}
