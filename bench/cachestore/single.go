package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/orch-tool/orch/gitstore/statecache"
)

// child runs one single-process operation and reports it.
func child(o *opts) error {
	var r childResult
	var err error
	if strings.HasPrefix(o.op, "f-") {
		r, err = formatOp(o)
	} else {
		r, err = boltOp(o)
	}
	if err != nil {
		return err
	}
	r.HWM = hwm()
	return report(r)
}

// singleOp is one row of the single-process tables.
type singleOp struct {
	op, label, store string
	write            bool
	want             int // the records the operation must see (0: any)

	ms, open, lookup, wall, rss []float64
	grew                        []float64 // journal bytes a save added
}

func singleRows(o *opts, w *workspace, runs, warm int) error {
	if err := copyFile(readPath(o.dir), writePath(o.dir)); err != nil {
		return err
	}
	if err := copyFile(readPath(o.dir), basePath(o.dir)); err != nil {
		return err
	}
	b, err := os.ReadFile(boltReadPath(o.dir))
	if err != nil {
		return err
	}
	if err := os.WriteFile(boltWritePath(o.dir), b, 0o600); err != nil {
		return err
	}
	ops := []*singleOp{
		{op: "f-read", label: "cold read of what a list needs", store: "state cache", want: w.n},
		{op: "b-read", label: "cold read of what a list needs", store: "bbolt", want: w.n},
		{op: "f-read-quarter", label: fmt.Sprintf("the same, journal of %.0f KB", float64(w.quarterSize)/1024), store: "state cache", want: w.n},
		{op: "f-read-journal", label: fmt.Sprintf("the same, journal of %.0f KB (Save's limit)", float64(w.journalSize)/1024), store: "state cache", want: w.n},
		{op: "b-read-sums", label: "the summaries alone", store: "bbolt", want: w.n},
		{op: "b-read-trees", label: "the trees and the sync index alone (every command)", store: "bbolt"},
		{op: "f-path", label: "lookup by path", store: "state cache", want: 1},
		{op: "b-path", label: "lookup by path", store: "bbolt", want: 1},
		{op: "f-id", label: "lookup by id", store: "state cache", want: 1},
		{op: "b-id", label: "lookup by id", store: "bbolt", want: 1},
		{op: "f-save", label: "one summary changed", store: "state cache, journal batch", write: true},
		{op: "f-save-base", label: "one summary changed", store: "state cache, whole base", write: true},
		{op: "b-put", label: "one summary changed", store: "bbolt, fsync", write: true},
		{op: "b-put-nosync", label: "one summary changed", store: "bbolt, NoSync", write: true},
		{op: "f-tr", label: "a transition's changes", store: "state cache, journal batch", write: true},
		{op: "f-tr-base", label: "a transition's changes", store: "state cache, whole base", write: true},
		{op: "b-tr", label: "a transition's changes", store: "bbolt, fsync", write: true},
		{op: "b-tr-nosync", label: "a transition's changes", store: "bbolt, NoSync", write: true},
	}
	jp := statecache.JournalPath(writePath(o.dir))
	for i := 0; i < warm+runs; i++ {
		fmt.Fprintf(os.Stderr, "cachestore: single-process round %d of %d\n", i+1, warm+runs)
		for k := range ops {
			op := ops[(k+i)%len(ops)]
			before := fileSize(jp)
			r, wall, rss, err := runChild([]string{"-role", "child", "-op", op.op, "-dir", o.dir, "-ref", o.ref,
				"-taskpath", w.taskPath, "-taskid", w.taskID, "-expect", fmt.Sprint(w.n)})
			if err != nil {
				return err
			}
			if op.want > 0 && r.N != op.want {
				return fmt.Errorf("%s saw %d records, not %d", op.op, r.N, op.want)
			}
			if i < warm {
				continue
			}
			op.ms, op.open, op.lookup = append(op.ms, r.Ms), append(op.open, r.OpenMs), append(op.lookup, r.LookupUs)
			op.wall, op.rss = append(op.wall, wall), append(op.rss, rss)
			if after := fileSize(jp); (op.op == "f-save" || op.op == "f-tr") && before > 0 && after > before {
				op.grew = append(op.grew, float64(after-before))
			}
		}
	}
	fmt.Printf("Each operation in a fresh process, %d runs after %d warm-ups, the operations alternated; medians (p90). The file in the page cache.\n\n", runs, warm)
	fmt.Println("| read | store | in the process, ms | of which open or load, ms | lookup alone, µs | the process, ms | peak RSS MB |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	for _, op := range ops {
		if op.write {
			continue
		}
		lk := ""
		if strings.Contains(op.op, "path") || strings.Contains(op.op, "id") {
			lk = fmt.Sprintf("%.1f", pct(op.lookup, 0.5))
		}
		fmt.Printf("| %s | %s | %.2f (%.2f) | %.2f | %s | %.1f (%.1f) | %.1f |\n", op.label, op.store,
			pct(op.ms, 0.5), pct(op.ms, 0.9), pct(op.open, 0.5), lk, pct(op.wall, 0.5), pct(op.wall, 0.9), pct(op.rss, 0.5))
	}
	fmt.Println()
	fmt.Println("| write | store | the save or Update, ms | load or open before it, ms | the process, ms | peak RSS MB |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, op := range ops {
		if !op.write {
			continue
		}
		fmt.Printf("| %s | %s | %.2f (%.2f) | %.2f | %.1f (%.1f) | %.1f |\n", op.label, op.store,
			pct(op.ms, 0.5), pct(op.ms, 0.9), pct(op.open, 0.5), pct(op.wall, 0.5), pct(op.wall, 0.9), pct(op.rss, 0.5))
	}
	limit := max(w.formatSize/16, 64<<10)
	for _, op := range ops {
		if len(op.grew) > 0 {
			g := pct(op.grew, 0.5)
			fmt.Printf("\n%s, journal batch: %.0f bytes (median), so a base of %.2f MB is written again every %.0f such saves (the journal's limit, %.0f KB).", op.label, g, mb(w.formatSize), float64(limit)/g, float64(limit)/1024)
		}
	}
	fmt.Println()
	return nil
}

// pct is the p-quantile of xs (nearest rank).
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
