package web

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// The charts are drawn here, as SVG in the page: no chart library in the
// browser, nothing to fetch, and the same escaping as the rest of the page
// (every label goes through esc). Colours come from the style sheet by
// class (q-<queue>, bar, axis), so that the charts follow the page's theme
// and the Content-Security-Policy needs no inline style.

func esc(s string) string { return template.HTMLEscapeString(s) }

// svgBuilder writes one <svg> element.
type svgBuilder struct {
	b    strings.Builder
	w, h int
}

func newSVG(w, h int, label string) *svgBuilder {
	s := &svgBuilder{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h, esc(label))
	return s
}

func (s *svgBuilder) text(x, y float64, anchor, class, t string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, esc(t))
}

func (s *svgBuilder) line(x1, y1, x2, y2 float64, class string) {
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" class="%s"/>`, x1, y1, x2, y2, class)
}

func (s *svgBuilder) rect(x, y, w, h float64, class, title string) {
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="%s">`, x, y, w, h, class)
	if title != "" {
		fmt.Fprintf(&s.b, `<title>%s</title>`, esc(title))
	}
	s.b.WriteString(`</rect>`)
}

func (s *svgBuilder) done() template.HTML {
	s.b.WriteString(`</svg>`)
	return template.HTML(s.b.String())
}

// bar is one bar of a bar chart.
type bar struct {
	Label string
	Value int
	Class string // extra class (a queue's colour)
}

// hbars draws horizontal bars, one per row, labelled on the left and with
// the value at the end of the bar.
func hbars(label string, bars []bar) template.HTML {
	const rowH, labelW, valueW, width = 22, 160, 36, 360
	h := rowH*len(bars) + 8
	s := newSVG(width, max(h, rowH+8), label)
	top := 0
	for _, b := range bars {
		top = max(top, b.Value)
	}
	span := float64(width - labelW - valueW)
	for i, b := range bars {
		y := float64(4 + i*rowH)
		s.text(labelW-8, y+15, "end", "label", clipLabel(b.Label, 22))
		w := 0.0
		if top > 0 {
			w = span * float64(b.Value) / float64(top)
		}
		if b.Value > 0 {
			w = math.Max(w, 2)
		}
		s.rect(labelW, y+3, w, rowH-6, strings.TrimSpace("bar "+b.Class), fmt.Sprintf("%s: %d", b.Label, b.Value))
		s.text(labelW+w+6, y+15, "start", "value", fmt.Sprint(b.Value))
	}
	return s.done()
}

// vbars draws a histogram: one column per bucket, the bucket's label under
// it and its count above.
func vbars(label string, bars []bar) template.HTML {
	const width, height, left, bottom, top = 360, 200, 12, 36, 20
	s := newSVG(width, height, label)
	n := len(bars)
	if n == 0 {
		return s.done()
	}
	peak := 0
	for _, b := range bars {
		peak = max(peak, b.Value)
	}
	slot := float64(width-2*left) / float64(n)
	plotH := float64(height - bottom - top)
	base := float64(height - bottom)
	s.line(left, base, width-left, base, "axis")
	for i, b := range bars {
		x := float64(left) + slot*float64(i)
		hgt := 0.0
		if peak > 0 {
			hgt = plotH * float64(b.Value) / float64(peak)
		}
		if b.Value > 0 {
			hgt = math.Max(hgt, 2)
		}
		s.rect(x+slot*0.15, base-hgt, slot*0.7, hgt, strings.TrimSpace("bar "+b.Class), fmt.Sprintf("%s: %d", b.Label, b.Value))
		s.text(x+slot/2, base-hgt-5, "middle", "value", fmt.Sprint(b.Value))
		s.text(x+slot/2, base+16, "middle", "label", clipLabel(b.Label, 10))
	}
	return s.done()
}

// series is one queue's counts at the sample times of a timeline.
type series struct {
	Name   string
	Class  string
	Counts []int
}

// stacked draws an area chart: the series stacked in order, over the
// sample times (oldest first), with a legend.
func stacked(label string, times []time.Time, ss []series) template.HTML {
	const width, height, left, right, top, bottom = 760, 260, 44, 170, 12, 30
	s := newSVG(width, height, label)
	n := len(times)
	plotW := float64(width - left - right)
	plotH := float64(height - top - bottom)
	base := float64(height - bottom)
	peak := 0
	for i := 0; i < n; i++ {
		sum := 0
		for _, se := range ss {
			sum += se.Counts[i]
		}
		peak = max(peak, sum)
	}
	if peak == 0 {
		peak = 1
	}
	x := func(i int) float64 {
		if n <= 1 {
			return float64(left) + plotW
		}
		return float64(left) + plotW*float64(i)/float64(n-1)
	}
	y := func(v int) float64 { return base - plotH*float64(v)/float64(peak) }
	// Grid: zero, half and the peak.
	for _, v := range []int{0, peak / 2, peak} {
		s.line(float64(left), y(v), float64(left)+plotW, y(v), "grid")
		s.text(float64(left)-6, y(v)+4, "end", "tick", fmt.Sprint(v))
	}
	below := make([]int, n)
	for _, se := range ss {
		var pts strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(i), y(below[i]+se.Counts[i]))
		}
		for i := n - 1; i >= 0; i-- {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(i), y(below[i]))
		}
		if n == 1 { // a single sample: a bar a few pixels wide
			pts.Reset()
			x0 := x(0) - 6
			fmt.Fprintf(&pts, "%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f", x0, y(below[0]+se.Counts[0]), x(0), y(below[0]+se.Counts[0]), x(0), y(below[0]), x0, y(below[0]))
		}
		fmt.Fprintf(&s.b, `<polygon points="%s" class="area %s"><title>%s</title></polygon>`, strings.TrimSpace(pts.String()), se.Class, esc(fmt.Sprintf("%s: %d now", se.Name, se.Counts[n-1])))
		for i := range below {
			below[i] += se.Counts[i]
		}
	}
	if n > 0 {
		s.text(x(0), base+18, "start", "tick", times[0].UTC().Format("2006-01-02 15:04"))
		s.text(x(n-1), base+18, "end", "tick", times[n-1].UTC().Format("2006-01-02 15:04"))
	}
	// Legend, top of the stack first (as the areas stand).
	lx := float64(width - right + 14)
	for i := len(ss) - 1; i >= 0; i-- {
		se := ss[i]
		ly := float64(top + (len(ss)-1-i)*20)
		s.rect(lx, ly, 12, 12, "swatch "+se.Class, "")
		s.text(lx+18, ly+10, "start", "label", fmt.Sprintf("%s %d", se.Name, se.Counts[n-1]))
	}
	return s.done()
}

// clipLabel shortens a label to n characters.
func clipLabel(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
