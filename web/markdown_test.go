package web

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMarkdownIsSafe: task text is hostile. Raw HTML shows as text, links
// keep only safe schemes, images become links, and the result is still the
// markdown a person wrote.
func TestMarkdownIsSafe(t *testing.T) {
	for _, c := range []struct {
		src       string
		want, bad []string
	}{
		{"hello <script>alert(1)</script> there", []string{`<code class="rawhtml">&lt;script&gt;</code>`}, []string{"<script"}},
		{"<div onclick=\"x()\">block</div>\n", []string{`<pre class="rawhtml">&lt;div onclick=&#34;x()&#34;&gt;block&lt;/div&gt;`}, []string{"<div"}},
		{"<img src=x onerror=alert(1)>", []string{"&lt;img src=x onerror=alert(1)&gt;"}, []string{"<img"}},
		{"[click](javascript:alert(1))", []string{`<span class="badlink"`, "click"}, []string{"javascript:", "<a "}},
		{"[click](JaVaScRiPt:alert(1))", []string{"click"}, []string{"<a ", "alert"}},
		{"[data](data:text/html,<b>x</b>)", nil, []string{"<a ", "<b>"}},
		{"[ok](https://example.com/a?b=1&c=2)", []string{`<a href="https://example.com/a?b=1&amp;c=2" rel="noreferrer nofollow">ok</a>`}, nil},
		{"[rel](../other) and [frag](#x)", []string{`href="../other"`, `href="#x"`}, nil},
		{"<https://example.com>", []string{`<a href="https://example.com" rel="noreferrer nofollow">https://example.com</a>`}, nil},
		{"<javascript:alert(1)>", nil, []string{"<a "}},
		{"![pic](https://tracker.example/p.png)", []string{`<a href="https://tracker.example/p.png"`, `<span class="img">image: pic</span>`}, []string{"<img"}},
		{"[t](https://x.example \"a\"onmouseover=\"b\")", nil, []string{`"onmouseover`}},
		{"# Title\n\n- [ ] todo\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", []string{"<h1>Title</h1>", `type="checkbox"`, "<table>"}, nil},
		{strings.Repeat("x", maxMarkdown+1), []string{`<pre class="raw">`}, nil},
	} {
		got := string(markdown(c.src))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("markdown(%.60q): no %q in %s", c.src, w, clip(got))
			}
		}
		for _, b := range c.bad {
			if strings.Contains(got, b) {
				t.Errorf("markdown(%.60q): %q in %s", c.src, b, clip(got))
			}
		}
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestHostileTaskPage: a task whose title, fields, body, feedback and
// branch carry markup shows it as text on every page.
func TestHostileTaskPage(t *testing.T) {
	dir := exampleRepo(t)
	ts := startServer(t, dir, testOptions(dir, "lead"))
	p := filepath.Join(dir, ".orchestrator", "tasks", "T-evx000-evil.md")
	src := `---
id: T-evx000
title: "<script>alert('title')</script>"
queue: incoming
priority: P1
custom: "</td><script>alert(3)</script>"
---
# <b>heading</b>

Body <iframe src="https://evil.example"></iframe> and [x](javascript:alert(4)).
`
	if err := os.WriteFile(p, []byte(src), 0o666); err != nil {
		t.Fatal(err)
	}
	as(t, dir, "lead", nil0) // commits the hand-made task
	for _, path := range []string{"/", "/task/T-evx000", "/inbox", "/stats"} {
		code, body := ts.get(t, nil, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		mustNotContain(t, path, body, "<script>alert", "<iframe", `href="javascript`, "<b>heading")
	}
	_, body := ts.get(t, nil, "/task/T-evx000")
	mustContain(t, "hostile task", body, "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;", "&lt;iframe")
}
