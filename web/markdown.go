package web

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// Task text is hostile (docs/design.md §10): it comes from agents and from GitHub.
// goldmark runs without html.WithUnsafe, and the renderer below goes
// further than its default, which drops raw HTML silently and lets every
// scheme but javascript:, vbscript:, file: and data: through:
//
//   - raw HTML, inline or as a block, is shown as text, escaped: the lead
//     sees what an agent wrote instead of a gap;
//   - a link keeps its href only for http, https, mailto and addresses
//     without a scheme (relative, #fragment); any other is shown as its
//     text, not as a link;
//   - an image becomes a link to it (the Content-Security-Policy would not
//     load it anyway, and a remote image would tell its server who reads
//     the task).
var md = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 100))),
)

// maxMarkdown is the largest text rendered as markdown. Inline parsing of
// hostile text can cost quadratic time (taskfile's Sections avoids it for
// the same reason); a longer text is shown as it is, in a <pre>.
const maxMarkdown = 128 << 10

// markdown renders task text as HTML that is safe to put in a page.
func markdown(src string) template.HTML {
	if len(src) > maxMarkdown {
		return template.HTML(`<pre class="raw">` + template.HTMLEscapeString(src) + `</pre>`)
	}
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		return template.HTML(`<pre class="raw">` + template.HTMLEscapeString(src) + `</pre>`)
	}
	return template.HTML(b.String())
}

// safeRenderer overrides goldmark's HTML renderer for the nodes that can
// carry markup or a URL.
type safeRenderer struct{}

func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindImage, renderImage)
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	_, _ = w.WriteString(`<code class="rawhtml">`)
	for i := 0; i < n.Segments.Len(); i++ {
		seg := n.Segments.At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(source))))
	}
	_, _ = w.WriteString(`</code>`)
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	_, _ = w.WriteString(`<pre class="rawhtml">`)
	for i := 0; i < n.Lines().Len(); i++ {
		line := n.Lines().At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(line.Value(source))))
	}
	if n.HasClosure() {
		_, _ = w.WriteString(template.HTMLEscapeString(string(n.ClosureLine.Value(source))))
	}
	_, _ = w.WriteString("</pre>\n")
	return ast.WalkSkipChildren, nil
}

// safeURL returns the URL as an attribute value, or "" when its scheme is
// not one a task may link to.
func safeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
	case "":
		// A relative address; "//host/x" leaves this site, which is
		// fine for http(s) but not worth the special case.
		if strings.ContainsAny(raw, "\\") {
			return ""
		}
	default:
		return ""
	}
	return raw
}

func openLink(w util.BufWriter, href string, title []byte) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.WriteString(template.HTMLEscapeString(href))
	_, _ = w.WriteString(`" rel="noreferrer nofollow"`)
	if len(title) > 0 {
		_, _ = w.WriteString(` title="`)
		_, _ = w.WriteString(template.HTMLEscapeString(string(title)))
		_ = w.WriteByte('"')
	}
	_ = w.WriteByte('>')
}

func renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	href := safeURL(string(n.Destination))
	if href == "" {
		// The text stays; the link goes.
		if entering {
			_, _ = w.WriteString(`<span class="badlink" title="link removed: not an http, https or mailto address">`)
		} else {
			_, _ = w.WriteString(`</span>`)
		}
		return ast.WalkContinue, nil
	}
	if entering {
		openLink(w, href, n.Title)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	label := string(n.Label(source))
	dest := string(n.URL(source))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(dest), "mailto:") {
		dest = "mailto:" + dest
	}
	if href := safeURL(dest); href != "" {
		openLink(w, href, nil)
		_, _ = w.WriteString(template.HTMLEscapeString(label))
		_, _ = w.WriteString("</a>")
	} else {
		_, _ = w.WriteString(template.HTMLEscapeString(label))
	}
	return ast.WalkContinue, nil
}

func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	href := safeURL(string(n.Destination))
	if entering {
		if href != "" {
			openLink(w, href, n.Title)
		}
		_, _ = w.WriteString(`<span class="img">image: `)
	} else {
		_, _ = w.WriteString(`</span>`)
		if href != "" {
			_, _ = w.WriteString("</a>")
		}
	}
	return ast.WalkContinue, nil
}
