package a

import "example.com/w/b"

// Entry's walk: Entry (a.go), b.G (b.go), h (a.go: a return), b.K (b.go:
// a return); i.M only when interface calls are resolved (a.go: a third).
func Entry() {
	b.G()
	h()
	b.K()
	var i I = t{}
	i.M()
}

func h() { b.G() }

type I interface{ M() }

type t struct{}

func (t) M() { b.K() }
