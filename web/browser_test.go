package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive the board in headless Chromium: what a lead
// reviews on a provisional task's page (its diff, its submit note, its
// logs), and the board at 1280 and 1920 px, where the columns a human
// must act on stay in view. They skip without a chromium; with
// ORCH_UPDATE_SCREENSHOT=1 they keep their screenshots in docs/
// (board-1280.png, board-1920.png, task-review.png):
//
//	ORCH_UPDATE_SCREENSHOT=1 go test ./web -run TestBrowser

// browserPath is the chromium the tests drive: the distribution's package,
// else one on PATH.
func browserPath() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// newBrowser starts headless Chromium for one test; every step it takes
// has the test's deadline.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	bin := browserPath()
	if bin == "" {
		t.Skip("browser test skipped: no chromium (/usr/bin/chromium or on PATH); apt-get install chromium to run it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1920, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancel(); cancelCtx(); cancelAlloc() })
	return ctx
}

func browse[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// screenshot keeps the viewport as docs/name with ORCH_UPDATE_SCREENSHOT=1,
// else in a temporary directory.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := browse(t, ctx, chromedp.CaptureScreenshot())
	out := filepath.Join(t.TempDir(), name)
	if os.Getenv("ORCH_UPDATE_SCREENSHOT") == "1" {
		out = filepath.Join("..", "docs", name)
	}
	if err := os.WriteFile(out, png, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))
}

// reviewScene is the example with a submission to review (hostile work,
// a submit note), its implementer's logs, and its review running now.
func reviewScene(t *testing.T) *testServer {
	t.Helper()
	dir := exampleRepo(t)
	provisionalWithWork(t, dir)
	now := time.Now()
	writeLog(t, dir, "T-3vfp8e", "1.log", strings.Repeat("reading the brief\n", 200)+"migrating the settings\ntests pass \x1b[32mok\x1b[0m\n", now.Add(-time.Hour))
	review := writeLog(t, dir, "T-3vfp8e", "review-1.log", "reviewing the diff\n", now)
	holdRun(t, dir, "live", []map[string]any{{"slot": "reviewer-1", "reviewer": true, "task": "T-3vfp8e", "attempt": 1,
		"started": now.Add(-75 * time.Second), "log": review, "pid": 1}})
	return startServer(t, dir, testOptions(dir, "lead"))
}

// TestBrowserReview: a provisional task's page shows what there is to
// review: the diff rendered with the hostile file name and text as text,
// the submit note, and the way to its logs, whose escape sequences are
// shown, not run.
func TestBrowserReview(t *testing.T) {
	ts := reviewScene(t)
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(ts.URL+"/task/T-3vfp8e"),
		chromedp.WaitVisible(chromedp.CSS(`section[aria-label="diff"] table.diff`)),
	); err != nil {
		t.Fatalf("the task page: %v", err)
	}
	diff := browse(t, ctx, chromedp.Text(chromedp.CSS(`section[aria-label="diff"]`)))
	for _, want := range []string{"<img src=x onerror=alert(1)>.txt", "<script>alert('diff')</script>", "plain line", "added"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff reads %q, without %q", diff, want)
		}
	}
	if n := browse(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#main img, #main script").length`)); n != 0 {
		t.Errorf("the diff made %d elements of the branch's text", n)
	}
	if n := browse(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.diff tr.add").length`)); n < 2 {
		t.Errorf("%d added lines rendered, want the 2 of the hostile file at least", n)
	}
	if note := browse(t, ctx, chromedp.Text(chromedp.CSS(`section[aria-label="submit notes"]`))); !strings.Contains(note, "Look at the <b>settings</b> migration first.") {
		t.Errorf("the submit note reads %q", note)
	}
	screenshot(t, ctx, "task-review.png")

	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/logs/T-3vfp8e"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`pre.logtext`)),
	); err != nil {
		t.Fatalf("the logs: %v", err)
	}
	// The newest is the review running now; the implementer's is linked.
	if h := browse(t, ctx, chromedp.Text(chromedp.CSS(`section[aria-label="logs"] h3`))); !strings.Contains(h, "review 1") || !strings.Contains(h, "running now") {
		t.Errorf("the log shown is %q, want review 1, running now", h)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/logs/T-3vfp8e?attempt=1"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`section[aria-label="logs"] li b`)),
	); err != nil {
		t.Fatalf("attempt 1's log: %v", err)
	}
	if log := browse(t, ctx, chromedp.Text(chromedp.CSS(`pre.logtext`))); !strings.Contains(log, `tests pass \x1b[32mok\x1b[0m`) {
		t.Errorf("attempt 1's log reads %q", log)
	}
	// Longer than its box, the log opens at its end: the newest lines.
	atEnd := browse(t, ctx, chromedp.Evaluate[bool](`(() => {
		const box = document.querySelector(".logbox"), pre = box.querySelector("pre");
		const b = box.getBoundingClientRect(), p = pre.getBoundingClientRect();
		return box.scrollHeight > box.clientHeight && p.bottom <= b.bottom + 1 && p.top < b.top;
	})()`))
	if !atEnd {
		t.Errorf("the log does not open at its newest lines")
	}
}

// TestBrowserBoardWidths: at 1280 px the escalated and blocked columns are
// in view whole, and the other columns scroll; at 1920 px too.
func TestBrowserBoardWidths(t *testing.T) {
	ts := reviewScene(t)
	ctx := newBrowser(t)
	for _, width := range []int64{1280, 1920} {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(ts.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS(`section[aria-label="escalated"] article.card`)),
		); err != nil {
			t.Fatalf("the board at %d px: %v", width, err)
		}
		for _, q := range []string{"escalated", "blocked"} {
			inView := browse(t, ctx, chromedp.Evaluate[bool](`(() => {
				const r = document.querySelector('section[aria-label="`+q+`"]').getBoundingClientRect();
				return r.width > 0 && r.left >= 0 && r.right <= document.documentElement.clientWidth;
			})()`))
			if !inView {
				t.Errorf("at %d px the %s column is not in view", width, q)
			}
		}
		// The page itself does not scroll sideways: the other columns do.
		if wide := browse(t, ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`)); wide {
			t.Errorf("at %d px the page scrolls sideways", width)
		}
		scrolls := browse(t, ctx, chromedp.Evaluate[bool](`(() => { const f = document.querySelector(".board-flow"); return f.scrollWidth > f.clientWidth; })()`))
		if width == 1280 && !scrolls {
			t.Errorf("at 1280 px the other columns fit: the test shows nothing")
		}
		// Scrolled to its end, the flow leaves the columns that need a
		// human where they were.
		browse(t, ctx, chromedp.Evaluate[bool](`(() => { const f = document.querySelector(".board-flow"); f.scrollLeft = f.scrollWidth; return true; })()`))
		if left := browse(t, ctx, chromedp.Evaluate[float64](`document.querySelector('section[aria-label="escalated"]').getBoundingClientRect().left`)); left < 0 {
			t.Errorf("at %d px scrolling the board moved escalated out of view", width)
		}
		browse(t, ctx, chromedp.Evaluate[bool](`(() => { document.querySelector(".board-flow").scrollLeft = 0; return true; })()`))
		// Running now names the task, the role and how long.
		if row := browse(t, ctx, chromedp.Text(chromedp.CSS(`section[aria-label="running"]`))); !strings.Contains(row, "Migrate settings to the new store") || !strings.Contains(row, "reviewer") {
			t.Errorf("running now reads %q", row)
		}
		screenshot(t, ctx, "board-"+itoa(int(width))+".png")
	}
}
