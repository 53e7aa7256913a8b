package ghreview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orch-tool/orch/internal/lazyregexp"
)

// GH runs the gh CLI. Bin is ORCH_GH or "gh".
type GH struct {
	Bin     string
	Dir     string
	Timeout time.Duration
}

// New returns the adapter for the gh named by ORCH_GH (default "gh"),
// running in dir.
func New(dir string) *GH {
	bin := os.Getenv("ORCH_GH")
	if bin == "" {
		bin = "gh"
	}
	return &GH{Bin: bin, Dir: dir, Timeout: 2 * time.Minute}
}

// Error is gh failing, or missing.
type Error struct {
	Args    []string
	Stderr  string
	Missing bool
	Err     error
}

func (e *Error) Error() string {
	if e.Missing {
		return fmt.Sprintf("the GitHub CLI %q was not found: %v", e.Args[0], e.Err)
	}
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	if len(msg) > 500 {
		msg = msg[:500] + "..."
	}
	// Name the command, not the text it was given (a pull request's body).
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		if strings.ContainsAny(a, "\n\r") || len(a) > 120 {
			a = "..."
		}
		args[i] = a
	}
	return fmt.Sprintf("%s failed: %s", strings.Join(args, " "), msg)
}

// Run runs gh with args and returns its stdout.
func (g *GH) Run(args ...string) ([]byte, error) {
	path, err := exec.LookPath(g.Bin)
	if err != nil {
		return nil, &Error{Args: append([]string{g.Bin}, args...), Missing: true, Err: err}
	}
	// A relative ORCH_GH names a file from here, not from g.Dir, where
	// exec would look for it.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = g.Dir
	cmd.Env = append(os.Environ(), "GH_PROMPT_DISABLED=1", "NO_COLOR=1", "GH_NO_UPDATE_NOTIFIER=1")
	var out, errb bytes.Buffer
	cmd.Stdout = &limitWriter{w: &out, n: MaxJSON + 1}
	cmd.Stderr = &limitWriter{w: &errb, n: 64 << 10}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s", g.Timeout)
		}
		return nil, &Error{Args: append([]string{g.Bin}, args...), Stderr: errb.String(), Err: err}
	}
	if out.Len() > MaxJSON {
		return nil, &Error{Args: append([]string{g.Bin}, args...), Err: errors.New("output too large")}
	}
	return out.Bytes(), nil
}

type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		if len(p) > room {
			l.w.Write(p[:room])
		} else {
			l.w.Write(p)
		}
	}
	return len(p), nil
}

var repoRE = lazyregexp.New(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// ValidRepo reports whether s looks like owner/name.
func ValidRepo(s string) bool { return repoRE().MatchString(s) && !strings.Contains(s, "..") }

// Repo returns the configured owner/name, or asks gh.
func (g *GH) Repo(configured string) (string, error) {
	if configured != "" {
		if !ValidRepo(configured) {
			return "", fmt.Errorf("github.repo %q is not owner/name", configured)
		}
		return configured, nil
	}
	out, err := g.Run("repo", "view", "--json", "nameWithOwner", "--jq", ".nameWithOwner")
	if err != nil {
		return "", err
	}
	repo := strings.TrimSpace(string(out))
	if !ValidRepo(repo) {
		return "", fmt.Errorf("gh repo view answered %q, not owner/name; set github.repo in config.yaml", repo)
	}
	return repo, nil
}

// Reviews fetches every review of a pull request.
func (g *GH) Reviews(repo string, pr int) ([]Review, error) {
	out, err := g.Run("api", "--paginate", fmt.Sprintf("repos/%s/pulls/%d/reviews?per_page=100", repo, pr))
	if err != nil {
		return nil, err
	}
	return ParseReviews(out)
}

// Comments fetches every review comment of a pull request.
func (g *GH) Comments(repo string, pr int) ([]Comment, error) {
	out, err := g.Run("api", "--paginate", fmt.Sprintf("repos/%s/pulls/%d/comments?per_page=100", repo, pr))
	if err != nil {
		return nil, err
	}
	return ParseComments(out)
}

var prURLRE = lazyregexp.New(`/pull/(\d+)\b`)

// CreatePR opens a draft pull request for branch and returns its number.
func (g *GH) CreatePR(repo, branch, base, title, body string) (int, string, error) {
	args := []string{"pr", "create", "--draft", "--head", branch, "--base", base, "--title", title, "--body", body}
	if repo != "" {
		args = append(args, "--repo", repo)
	}
	out, err := g.Run(args...)
	if err != nil {
		return 0, "", err
	}
	m := prURLRE().FindStringSubmatch(string(out))
	if m == nil {
		return 0, "", fmt.Errorf("gh pr create did not print a pull request URL: %q", strings.TrimSpace(string(out)))
	}
	n, _ := strconv.Atoi(m[1])
	url := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(url, '\n'); i >= 0 {
		url = url[i+1:]
	}
	return n, url, nil
}

// PR is what gh pr view tells of a pull request, for landing
// (land.mode: github, docs/design.md §8.5).
type PR struct {
	Number      int    `json:"number"`
	State       string `json:"state"`     // OPEN, MERGED or CLOSED
	Mergeable   string `json:"mergeable"` // MERGEABLE, CONFLICTING or UNKNOWN (not computed yet)
	IsDraft     bool   `json:"isDraft"`
	HeadRefOid  string `json:"headRefOid"`
	BaseRefName string `json:"baseRefName"`
	MergeCommit *struct {
		Oid string `json:"oid"`
	} `json:"mergeCommit"`
}

// Merged is the commit that holds a merged pull request's work ("" when
// it is not merged).
func (p *PR) Merged() string {
	if p.State != "MERGED" || p.MergeCommit == nil {
		return ""
	}
	return p.MergeCommit.Oid
}

// ViewPR reads a pull request's state.
func (g *GH) ViewPR(repo string, n int) (*PR, error) {
	out, err := g.Run("pr", "view", strconv.Itoa(n), "--repo", repo, "--json", "number,state,mergeable,isDraft,headRefOid,baseRefName,mergeCommit")
	if err != nil {
		return nil, err
	}
	var p PR
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, &ParseError{What: fmt.Sprintf("gh pr view %d", n), Msg: err.Error()}
	}
	if p.Number != n {
		return nil, &ParseError{What: fmt.Sprintf("gh pr view %d", n), Msg: fmt.Sprintf("it answered pull request %d", p.Number)}
	}
	return &p, nil
}

// ReadyPR marks a draft pull request ready for review (orch opens them as
// drafts; a draft cannot merge).
func (g *GH) ReadyPR(repo string, n int) error {
	_, err := g.Run("pr", "ready", strconv.Itoa(n), "--repo", repo)
	return err
}

// MergePR merges a pull request with strategy (merge, squash or rebase),
// only while its head is head: work pushed after the approval never
// merges unreviewed.
func (g *GH) MergePR(repo string, n int, strategy, head string) error {
	_, err := g.Run("pr", "merge", strconv.Itoa(n), "--repo", repo, "--"+strategy, "--match-head-commit", head)
	return err
}
