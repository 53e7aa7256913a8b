package taskfile

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/orch-tool/orch/internal/lazyregexp"
)

// IDPattern is the shape of a task ID: a prefix (default "T-") and lowercase
// base32 characters. Validating it keeps IDs usable in file and branch names.
var IDPattern = lazyregexp.New(`^[A-Za-z][A-Za-z0-9]{0,15}-[0-9a-z]{4,16}$`)

// ValidID reports whether id can name a task.
func ValidID(id string) bool { return IDPattern().MatchString(id) }

// ValidName reports whether s can be an agent, role or label name: a letter,
// digit or _ first, then up to 63 more of those or . @ + - and space; no
// space at the end and no "..". So a name can never become a path, a flag
// or a ref. It is the regexp ^[\p{L}\p{N}_][\p{L}\p{N}_.@+ -]{0,63}$
// written out: every command checks the agent's name, and compiling that
// regexp's Unicode classes cost every command time and memory.
func ValidName(s string) bool {
	n := 0
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false // invalid UTF-8
			}
		}
		n++
		switch {
		case n > 64:
			return false
		case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_':
		case n > 1 && (r == '.' || r == '@' || r == '+' || r == ' ' || r == '-'):
		default:
			return false
		}
	}
	return n > 0 && !strings.HasSuffix(s, " ") && !strings.Contains(s, "..")
}

// ValidPersonName reports whether s can name a person: anything git
// accepts as user.name that orch can write safely (quoted where it must
// be) into YAML, commit identities and events: 1 to 100 bytes of UTF-8,
// no control characters, no < or > (git's identity delimiters), no / or \
// and no - first (never a path or a flag), no space at either end.
// Apostrophes, commas, colons, other scripts and emoji are fine ("Seán
// O'Brien", "Doe, John"). An agent's name (--agent, ORCH_AGENT) keeps the
// stricter ValidName.
func ValidPersonName(s string) bool {
	if s == "" || len(s) > 100 || !utf8.ValidString(s) || s != strings.TrimSpace(s) || strings.ContainsAny(s, "<>/\\") || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Validate reports every problem with the task's fields, each with its line.
// A file that does not parse never gets here: Parse reports that.
func (f *File) Validate() []*ParseError {
	var errs []*ParseError
	add := func(key, format string, a ...any) {
		line := f.Line(key)
		if line == 0 {
			line = f.openLine
		}
		errs = append(errs, &ParseError{Path: f.Path, Line: line, Msg: fmt.Sprintf(format, a...)})
	}
	t := f.Task
	if !f.hasFM {
		errs = append(errs, &ParseError{Path: f.Path, Line: 1, Msg: "no frontmatter: a task file starts with a --- block holding at least id, title and queue"})
		return errs
	}
	if t.ID == "" {
		add(KeyID, "id: missing")
	} else if !ValidID(t.ID) {
		add(KeyID, "id: %q is not a task ID (like T-4k9x2m)", t.ID)
	}
	if strings.TrimSpace(t.Title) == "" {
		add(KeyTitle, "title: missing (set title: or start the body with a # heading)")
	}
	if t.Queue == "" {
		add(KeyQueue, "queue: missing")
	} else if !t.Queue.Valid() {
		add(KeyQueue, "queue: %q is not a queue (one of %s)", t.Queue, QueueNames())
	}
	if f.Has(KeyPriority) {
		if _, ok := NormalizePriority(t.Priority); !ok {
			add(KeyPriority, "priority: %q is not a priority (P0..P3 or critical, high, medium, low)", t.Priority)
		}
	}
	for _, k := range []struct {
		key  string
		vals []string
	}{{KeyLockedOut, t.LockedOut}, {KeyWorkedBy, t.WorkedBy}, {KeyLabels, t.Labels}} {
		for _, v := range k.vals {
			if ok := ValidPersonName(v); !ok || k.key == KeyLabels && !ValidName(v) {
				add(k.key, "%s: %q is not a valid name", k.key, v)
			}
		}
	}
	for _, r := range t.GitHubReviews {
		if _, err := strconv.ParseInt(r, 10, 64); err != nil {
			add(KeyGitHubReviews, "github_reviews: %q is not a review id", r)
		}
	}
	for _, d := range t.DependsOn {
		if !ValidID(d) {
			add(KeyDependsOn, "depends_on: %q is not a task ID", d)
		}
	}
	for _, k := range []struct{ key, val string }{{KeyRole, t.Role}, {KeyClaimedBy, t.ClaimedBy}, {KeyAssignedTo, t.AssignedTo}, {KeySubmittedBy, t.SubmittedBy}} {
		valid := ValidPersonName
		if k.key == KeyRole {
			valid = ValidName
		}
		if k.val != "" && !valid(k.val) {
			add(k.key, "%s: %q is not a valid name", k.key, k.val)
		}
	}
	for _, fl := range f.fields {
		if n := expandedSize(fl.valNode, MaxAliasValues); n > MaxAliasValues {
			add(fl.key, "%s: YAML aliases expand to more than %d values (an alias bomb); write the values out, or remove the key", fl.key, MaxAliasValues)
			break // the keys after it usually expand further: one is enough
		}
	}
	if t.Branch != "" && !ValidBranch(t.Branch) {
		add(KeyBranch, "branch: %q is not a valid branch name", t.Branch)
	}
	if t.BaseBranch != "" && !ValidBranch(t.BaseBranch) {
		add(KeyBaseBranch, "base_branch: %q is not a valid branch name", t.BaseBranch)
	}
	return errs
}

// ValidBranch applies git's check-ref-format rules to a branch name, and
// refuses names that would leave refs/heads/.
func ValidBranch(name string) bool {
	if name == "" || len(name) > 200 || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") ||
		strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") ||
		strings.Contains(name, "..") || strings.Contains(name, "//") || strings.Contains(name, "@{") ||
		strings.HasPrefix(name, "refs/") || name == "@" || name == "HEAD" {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return false
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return true
}

// MaxAliasValues bounds how many values one frontmatter key may stand for
// once its YAML aliases are expanded. orch itself never expands them, but
// any other YAML reader of the file would.
const MaxAliasValues = 10000

// expandedSize counts the nodes n stands for with its aliases expanded,
// stopping once the count passes limit. Each node is counted once per
// reference, with a memo, so a bomb costs linear time.
func expandedSize(n *yaml.Node, limit int) int {
	memo := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if n == nil {
			return 0
		}
		if n.Kind == yaml.AliasNode {
			if depth > 1000 {
				return limit + 1
			}
			return size(n.Alias, depth+1)
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = limit + 1 // a node that contains itself is unbounded
		total := 1
		for _, c := range n.Content {
			if total += size(c, depth+1); total > limit {
				total = limit + 1
				break
			}
		}
		memo[n] = total
		return total
	}
	return size(n, 0)
}

// CheckIDKept refuses an edit of a task file that changes the task's id
// (was): a task's id is its name everywhere (branches, depends_on, events),
// so no edit, by hand or through orch edit, may change it.
func CheckIDKept(path string, edited *File, was string) *ParseError {
	if was == "" || edited.Task.ID == was {
		return nil
	}
	return &ParseError{Path: path, Line: edited.Line(KeyID), Msg: fmt.Sprintf("id: a task's id cannot change (it is %s)", was)}
}
