package main

import (
	"fmt"
)

// variants prints the figures of the definition's variants around o.
func (p *program) variants(o options) error {
	rs, err := mapping(o.merge)
	if err != nil {
		return err
	}
	const noSync = "workflow.ClaimSync,workflow.FetchTaskBranch"
	const brief = "coordinator,workflow,gitstore,gitstore/gitrepo,gitstore/statecache,taskfile"
	type variant struct {
		what string
		set  func(*options)
	}
	vs := []variant{
		{"the definition (static, first visits)", func(*options) {}},
		{"  without the --sync path", func(v *options) { v.skip = noSync }},
		{"  only the brief's packages", func(v *options) { v.only = brief }},
		{"  closures folded into their function", func(v *options) { v.closures = true }},
		{"  only exported functions are stops", func(v *options) { v.exported = true }},
		{"  exported only, without --sync", func(v *options) { v.exported, v.skip = true, noSync }},
		{"  a call to a visited function is a stop", func(v *options) { v.revisits = true }},
		{"  revisits, without --sync", func(v *options) { v.revisits, v.skip = true, noSync }},
		{"  every visit expanded, depth 3", func(v *options) { v.depth = 3 }},
		{"  every visit expanded, depth 4", func(v *options) { v.depth = 4 }},
		{"  every visit expanded, depth 5", func(v *options) { v.depth = 5 }},
		{"  every visit expanded, depth 4, without --sync", func(v *options) { v.depth, v.skip = 4, noSync }},
		{"vta: interface and func-value calls resolved", func(v *options) { v.graph = "vta" }},
		{"  vta, without --sync", func(v *options) { v.graph, v.skip = "vta", noSync }},
		{"cha: interface and func-value calls resolved", func(v *options) { v.graph = "cha" }},
		{"  cha, without --sync", func(v *options) { v.graph, v.skip = "cha", noSync }},
	}
	fmt.Printf("%-48s %6s %5s %6s %8s %5s\n", "variant", "stops", "runs", o.by+"s", "returns", "rmh")
	for _, vr := range vs {
		v := o
		v.graph = "static"
		vr.set(&v)
		ss, err := p.walk(v)
		if err != nil {
			return err
		}
		r, err := measure(ss, v, rs)
		if err != nil {
			return err
		}
		rmh := 0
		for _, s := range ss {
			switch s.file {
			case "gitstore/reconcile.go", "gitstore/merge.go", "gitstore/handedit.go":
				rmh++
			}
		}
		fmt.Printf("%-48s %6d %5d %6d %8d %5d\n", vr.what, r.stops, r.runs, r.files, r.returns, rmh)
	}
	fmt.Println("runs: stops with consecutive ones in one file counted once; rmh: stops in gitstore's reconcile.go, merge.go, handedit.go")
	return nil
}
