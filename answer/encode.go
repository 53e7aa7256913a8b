package answer

import (
	"time"
	"unicode/utf8"

	"github.com/orch-tool/orch/taskfile"
)

// Time is a time in a JSON answer: RFC 3339 in UTC with exactly three
// fraction digits (2026-11-25T20:02:29.960Z), or null when unset.
type Time time.Time

// timeLayout is the one format of times in JSON answers.
const timeLayout = "2006-01-02T15:04:05.000Z"

func (t Time) MarshalJSON() ([]byte, error) {
	return appendTime(nil, time.Time(t)), nil
}

// appendTime writes t as Time writes it. Years 0 to 9999 are written digit
// by digit rather than by time.AppendFormat, which reads its layout on every
// call: orch list --json writes a few times for each task.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, timeLayout)
		return append(b, '"')
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
}

// TimeText turns a time written as text (event logs) into a Time (unset
// when it does not parse).
func TimeText(s string) Time {
	t, err := taskfile.ParseTime(s)
	if err != nil {
		return Time{}
	}
	return Time(t)
}

// appendRaw writes compact JSON made by encoding/json (null for nil).
func appendRaw(b []byte, raw []byte) []byte {
	if raw == nil {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendList writes a list of strings (null for nil, as encoding/json).
func appendList(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// AppendString quotes s exactly as encoding/json does with HTML escaping
// on: <, > and & as \u003c..., U+2028/9 escaped, invalid UTF-8 as U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

// plainASCII marks the bytes a JSON string holds as they are: printable
// ASCII but for ", \ and the HTML-escaped <, > and &. One look-up a byte
// instead of six comparisons: the escaping was a visible part of list
// --json's CPU time.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendEscaped is AppendString without the quotes.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
