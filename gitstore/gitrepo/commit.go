package gitrepo

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Signature is an author or committer.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

func (s Signature) String() string { return s.Name + " <" + s.Email + ">" }

func (s Signature) encode() string {
	_, off := s.When.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s <%s> %d %c%02d%02d", cleanIdent(s.Name), cleanIdent(s.Email), s.When.Unix(), sign, off/3600, (off%3600)/60)
}

func cleanIdent(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// CommitInfo is a parsed commit of the state branch.
type CommitInfo struct {
	Hash      plumbing.Hash
	Tree      plumbing.Hash
	Parents   []plumbing.Hash
	Author    Signature
	Committer Signature
	Message   string
}

// Subject is the first line of the message.
func (c *CommitInfo) Subject() string {
	s, _, _ := strings.Cut(c.Message, "\n")
	return s
}

// ParseCommit parses a commit object.
func ParseCommit(raw []byte) (*CommitInfo, error) {
	c := &CommitInfo{}
	hdr, msg, found := bytes.Cut(raw, []byte("\n\n"))
	if !found {
		hdr = raw
	}
	c.Message = string(msg)
	for _, line := range bytes.Split(hdr, []byte("\n")) {
		k, v, _ := bytes.Cut(line, []byte(" "))
		switch string(k) {
		case "tree":
			if !plumbing.IsHash(string(v)) {
				return nil, fmt.Errorf("bad tree line")
			}
			c.Tree = plumbing.NewHash(string(v))
		case "parent":
			if !plumbing.IsHash(string(v)) {
				return nil, fmt.Errorf("bad parent line")
			}
			c.Parents = append(c.Parents, plumbing.NewHash(string(v)))
		case "author":
			c.Author = parseSig(string(v))
		case "committer":
			c.Committer = parseSig(string(v))
		}
	}
	if c.Tree.IsZero() {
		return nil, fmt.Errorf("commit has no tree")
	}
	return c, nil
}

func parseSig(s string) Signature {
	lt := strings.IndexByte(s, '<')
	gt := strings.LastIndexByte(s, '>')
	if lt < 0 || gt < lt {
		return Signature{Name: s}
	}
	sig := Signature{Name: strings.TrimSpace(s[:lt]), Email: s[lt+1 : gt]}
	f := strings.Fields(s[gt+1:])
	if len(f) >= 1 {
		sec, _ := strconv.ParseInt(f[0], 10, 64)
		loc := time.UTC
		if len(f) >= 2 && len(f[1]) == 5 {
			h, _ := strconv.Atoi(f[1][1:3])
			m, _ := strconv.Atoi(f[1][3:5])
			off := h*3600 + m*60
			if f[1][0] == '-' {
				off = -off
			}
			loc = time.FixedZone("", off)
		}
		sig.When = time.Unix(sec, 0).In(loc)
	}
	return sig
}

// EncodeCommit encodes a commit object (a message ends in one newline).
func EncodeCommit(tree plumbing.Hash, parents []plumbing.Hash, author, committer Signature, msg string) []byte {
	var b bytes.Buffer
	b.WriteString("tree " + tree.String() + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p.String() + "\n")
	}
	b.WriteString("author " + author.encode() + "\n")
	b.WriteString("committer " + committer.encode() + "\n\n")
	msg = strings.TrimRight(msg, "\n") + "\n"
	b.WriteString(msg)
	return b.Bytes()
}
