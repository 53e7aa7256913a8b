package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium is the browser the browser test drives: the distribution's
// package (.ci/run installs it), else a chromium on PATH.
func chromium() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// serveInfo is what orch serve --json prints once it listens.
type serveInfo struct {
	URL      string `json:"url"`
	LoginURL string `json:"login_url"`
	Actor    string `json:"actor"`
	Actions  bool   `json:"actions"`
}

// startServe runs orch serve in the main worktree on a free port and
// returns what it printed; the test's end stops it with SIGINT, and it
// must then exit 0.
func startServe(t *testing.T, r *Repo) serveInfo {
	t.Helper()
	cmd := exec.Command(orchBin, "serve", "--json", "--addr", "127.0.0.1:0")
	cmd.Dir, cmd.Env = r.Main, r.Env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("orch serve: %v\n%s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		t.Fatalf("orch serve printed no address: %v\n%s", err, stderr.String())
	}
	var info serveInfo
	if err := json.Unmarshal(line, &info); err != nil || info.URL == "" {
		t.Fatalf("orch serve --json: %q: %v", line, err)
	}
	return info
}

// TestBrowser drives the board in headless Chromium: the example
// repository's board and a task's rendered feedback, then a claim made
// with the CLI that the open page shows without a reload (Server-Sent
// Events). It saves a screenshot of the board: docs/board.png with
// ORCH_UPDATE_SCREENSHOT=1 (the README shows it), else in a temporary
// directory.
func TestBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("browser test skipped: no chromium (/usr/bin/chromium or on PATH); install the distribution's package (apt-get install chromium) to run it; .ci/run does")
	}
	r := NewExampleRepo(t)
	info := startServe(t, r)
	if !info.Actions || info.Actor != "lead" || info.LoginURL == "" {
		t.Fatalf("orch serve: %+v, want actions as lead", info)
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1860, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelCtx()
	// Every step has a deadline: a test that waits forever tells nothing.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	// The printed link: the token becomes a cookie, the page the board.
	err := chromedp.Do(ctx,
		// Wide enough for the eight open queues side by side (the
		// screenshot).
		chromedp.EmulateViewport(1860, 400),
		chromedp.Navigate(info.LoginURL),
		chromedp.WaitVisible(chromedp.CSS(`article.card[data-id="T-4k9x2m"]`)),
	)
	if err != nil {
		t.Fatalf("loading the board: %v", err)
	}
	cards := run(t, ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("article.card")).map(c => c.closest("section").getAttribute("aria-label") + " " + c.dataset.id)`))
	for _, want := range []string{
		"incoming T-9mwq4c", "incoming T-7hd3kq", "claimed T-3vfp8e", "provisional T-5ncg1r", "rejected T-4k9x2m",
		"needs_continuation T-6xbt0z", "blocked T-8rjy5d", "escalated T-1qzk7w",
	} {
		if !slices.Contains(cards, want) {
			t.Errorf("no card %q on the board: %q", want, cards)
		}
	}
	if slices.ContainsFunc(cards, func(c string) bool { return strings.HasPrefix(c, "done ") }) {
		t.Errorf("the board shows done tasks by default: %q", cards)
	}
	card := run(t, ctx, chromedp.Text(chromedp.CSS(`article[data-id="T-4k9x2m"]`)))
	for _, want := range []string{"T-4k9x2m", "P1", "rej 1", "Snap fork start like the other shapes", "implementer"} {
		if !strings.Contains(card, want) {
			t.Errorf("the card of T-4k9x2m reads %q, without %q", card, want)
		}
	}
	if live := run(t, ctx, chromedp.Text(chromedp.CSS(`#live`))); !strings.HasPrefix(live, "at ") {
		t.Errorf("the live indicator says %q", live)
	}

	// A task's page: the review feedback rendered, issue by issue, and the
	// body's markdown.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(strings.TrimSuffix(info.URL, "/")+"/task/T-4k9x2m"),
		chromedp.WaitVisible(chromedp.CSS(`section.review`)),
	); err != nil {
		t.Fatalf("loading the task page: %v", err)
	}
	issue := run(t, ctx, chromedp.Text(chromedp.CSS(`section.review .issue.blocking`)))
	for _, want := range []string{"R1.1", "src/components/SketchView2D.tsx:1709", "Fork start uses raw svgPos"} {
		if !strings.Contains(issue, want) {
			t.Errorf("the blocking issue reads %q, without %q", issue, want)
		}
	}
	if sev := run(t, ctx, chromedp.Text(chromedp.CSS(`section.review .issue.blocking .sev`))); sev != "BLOCKING" {
		t.Errorf("severity %q", sev)
	}
	if src := run(t, ctx, chromedp.Text(chromedp.CSS(`section.review .source h4`))); !strings.Contains(src, "From GitHub PR review by alice") {
		t.Errorf("the first source reads %q", src)
	}
	body := run(t, ctx, chromedp.Text(chromedp.CSS(`section.body`)))
	boxes := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('section.body input[type="checkbox"]').length`))
	if !strings.Contains(body, "Acceptance Criteria") || boxes == 0 {
		t.Errorf("the body is not rendered: %d checkboxes in %q", boxes, body)
	}
	if footer := run(t, ctx, chromedp.Text(chromedp.CSS(`footer.foot`))); !strings.Contains(footer, "acting as lead") {
		t.Errorf("the footer says %q, want acting as lead", footer)
	}

	// Back to the board; a claim made with the CLI moves the card from
	// incoming to claimed without a reload: the marker set on the page
	// survives, and the live indicator says it updated.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(info.URL),
		chromedp.WaitVisible(chromedp.CSS(`section[aria-label="incoming"] article[data-id="T-7hd3kq"]`)),
	); err != nil {
		t.Fatalf("the board again: %v", err)
	}
	run(t, ctx, chromedp.Evaluate[bool](`window.orchNotReloaded = true`))
	start := time.Now()
	r.MustOrch(r.Main, "claim", "--task", "T-7hd3kq", "--agent", "agent-a")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`section[aria-label="claimed"] article[data-id="T-7hd3kq"]`))); err != nil {
		t.Fatalf("waiting for the claim to show: %v", err)
	}
	t.Logf("the claim showed on the open board %s after the CLI started", time.Since(start).Round(time.Millisecond))
	if !run(t, ctx, chromedp.Evaluate[bool](`window.orchNotReloaded === true`)) {
		t.Errorf("the page was reloaded, not updated")
	}
	if live := run(t, ctx, chromedp.Text(chromedp.CSS(`#live`))); !strings.HasPrefix(live, "updated ") {
		t.Errorf("the live indicator says %q after the update", live)
	}
	if who := run(t, ctx, chromedp.Text(chromedp.CSS(`article[data-id="T-7hd3kq"] .who`))); who != "@agent-a" {
		t.Errorf("the claimed card names %q, want @agent-a", who)
	}

	// The screenshot, of the board as it stands.
	png := run(t, ctx, chromedp.CaptureScreenshot())
	out := filepath.Join(t.TempDir(), "board.png")
	if os.Getenv("ORCH_UPDATE_SCREENSHOT") == "1" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		out = filepath.Join(root, "docs", "board.png")
	}
	if err := os.WriteFile(out, png, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))
}

// run runs one browser action and returns its value; a failure ends the
// test.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}
