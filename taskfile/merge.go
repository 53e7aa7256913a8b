package taskfile

import (
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Conflict is one place where both sides of a merge changed the same thing
// differently. Key is a frontmatter key, or "" for the body.
type Conflict struct {
	Key    string `json:"key"`
	Ours   string `json:"ours"`
	Theirs string `json:"theirs"`
}

// Merge3 merges two descendants of base: frontmatter key by key, the body as
// lines. The result starts from ours, so the formatting of the side a person
// edited is kept. Where both sides changed a key (or the same lines)
// differently, ours is kept and a Conflict is reported.
func Merge3(base, ours, theirs *File) (*File, []Conflict, error) {
	out := ours
	var conflicts []Conflict
	keys := unionKeys(base, ours, theirs)
	for _, k := range keys {
		bn, on, tn := base.Node(k), ours.Node(k), theirs.Node(k)
		switch {
		case nodeEqual(on, tn, 0):
			// same on both sides
		case nodeEqual(on, bn, 0):
			var err error
			out, err = out.takeField(theirs, k)
			if err != nil {
				return nil, nil, err
			}
		case nodeEqual(tn, bn, 0):
			// only ours changed: keep it
		default:
			o, _ := ours.Raw(k)
			t, _ := theirs.Raw(k)
			conflicts = append(conflicts, Conflict{Key: k, Ours: o, Theirs: t})
		}
	}
	body, ok := MergeText(string(base.Body()), string(ours.Body()), string(theirs.Body()))
	if !ok {
		conflicts = append(conflicts, Conflict{Key: "", Ours: "(body)", Theirs: "(body)"})
	} else if body != string(out.Body()) {
		var err error
		out, err = out.WithBody([]byte(body))
		if err != nil {
			return nil, nil, err
		}
	}
	return out, conflicts, nil
}

func unionKeys(files ...*File) []string {
	seen := map[string]bool{}
	var keys []string
	for _, f := range files {
		for _, k := range f.Keys() {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// TakeField returns f with key copied from other, as other writes it (or
// removed when other lacks it).
func TakeField(f, other *File, key string) (*File, error) { return f.takeField(other, key) }

// SameField reports whether key is in both a and b, or in neither, and
// means the same in both: written alike, or with values that compare equal
// (a value too large or deep to compare is the same only when written
// alike).
func SameField(a, b *File, key string) bool {
	ra, oka := a.Raw(key)
	rb, okb := b.Raw(key)
	if oka != okb {
		return false
	}
	return ra == rb || nodeEqual(a.Node(key), b.Node(key), 0)
}

// takeField copies key, as written in other, into f (or removes it when
// other lacks it).
func (f *File) takeField(other *File, key string) (*File, error) {
	of := other.field(key)
	if of == nil {
		return f.unset(key)
	}
	text := other.Src[of.start:of.end]
	if len(text) == 0 || (text[len(text)-1] != '\n' && text[len(text)-1] != '\r') {
		text = append(append([]byte{}, text...), f.newline()...)
	}
	var start, end int
	if fl := f.field(key); fl != nil {
		start, end = fl.start, fl.end
	} else if f.hasFM && len(f.fields) > 0 {
		start = f.insertPos(key)
		end = start
	} else if f.hasFM {
		start, end = f.fmEnd, f.fmEnd
	} else {
		// No frontmatter yet (a task written by hand): the key starts one.
		text = append(append([]byte("---\n"), text...), "---\n"...)
	}
	src := make([]byte, 0, len(f.Src)+len(text))
	src = append(src, f.Src[:start]...)
	src = append(src, text...)
	src = append(src, f.Src[end:]...)
	out, err := Parse(f.Path, src)
	if err != nil || !nodeEqual(out.Node(key), other.Node(key), 0) || string(out.Body()) != string(f.Body()) {
		return nil, &EditError{Path: f.Path, Key: key, Msg: "cannot merge this key without disturbing the others"}
	}
	for _, k := range f.Keys() {
		if k != key && !nodeEqual(out.Node(k), f.Node(k), 0) {
			return nil, &EditError{Path: f.Path, Key: key, Msg: "cannot merge this key without disturbing the others"}
		}
	}
	return out, nil
}

// MergeText is a line-based three-way merge (diff3). It reports false when
// both sides changed the same region differently.
func MergeText(base, ours, theirs string) (string, bool) {
	if ours == theirs || theirs == base {
		return ours, true
	}
	if ours == base {
		return theirs, true
	}
	o := splitLines(base)
	a := splitLines(ours)
	b := splitLines(theirs)
	ma := matchLines(o, a)
	mb := matchLines(o, b)
	var out []string
	lo, la, lb := 0, 0, 0
	ok := true
	resolve := func(oc, ac, bc []string) {
		switch {
		case eqLines(ac, oc):
			out = append(out, bc...)
		case eqLines(bc, oc), eqLines(ac, bc):
			out = append(out, ac...)
		case len(oc) == 0:
			// Both sides only added lines here: keep both, theirs first,
			// and what they added alike once (a person's lines that
			// reached the branch by one path and the view by another).
			p, q := commonEnds(ac, bc)
			out = append(out, ac[:p]...)
			out = append(out, bc[p:len(bc)-q]...)
			out = append(out, ac[p:len(ac)-q]...)
			out = append(out, ac[len(ac)-q:]...)
		default:
			ok = false
			out = append(out, ac...)
		}
	}
	for {
		k := 0
		for lo+k < len(o) && ma[lo+k] == la+k && mb[lo+k] == lb+k {
			k++
		}
		if k > 0 {
			out = append(out, o[lo:lo+k]...)
			lo, la, lb = lo+k, la+k, lb+k
			continue
		}
		next := lo
		for next < len(o) && (ma[next] < 0 || mb[next] < 0) {
			next++
		}
		if next == len(o) {
			resolve(o[lo:], a[la:], b[lb:])
			break
		}
		resolve(o[lo:next], a[la:ma[next]], b[lb:mb[next]])
		lo, la, lb = next, ma[next], mb[next]
	}
	return strings.Join(out, ""), ok
}

func splitLines(s string) []string { return splitAfterAll(s) }

// commonEnds returns how many lines a and b share at their start, and then
// at their end (not overlapping the start).
func commonEnds(a, b []string) (prefix, suffix int) {
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}

func eqLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// matchLines returns, for each line of o, the index of the line of a it is
// matched to by a longest-common-subsequence diff, or -1.
func matchLines(o, a []string) []int {
	m := make([]int, len(o))
	for i := range m {
		m[i] = -1
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 2 * time.Second
	src, dst, arr := dmp.DiffLinesToRunes(strings.Join(o, ""), strings.Join(a, ""))
	diffs := dmp.DiffMainRunes(src, dst, false)
	diffs = dmp.DiffCharsToLines(diffs, arr)
	i, j := 0, 0
	for _, d := range diffs {
		n := len(splitAfterAll(d.Text))
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			for k := 0; k < n && i < len(o) && j < len(a); k++ {
				m[i] = j
				i++
				j++
			}
		case diffmatchpatch.DiffDelete:
			i += n
		case diffmatchpatch.DiffInsert:
			j += n
		}
	}
	return m
}

func splitAfterAll(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.SplitAfter(s, "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}
