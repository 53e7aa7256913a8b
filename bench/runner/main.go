// Command runner times a command: it runs it a few times to warm the page
// cache, then R more times, and prints the median and p90 wall time and the
// peak resident set size (the children's rusage ru_maxrss), plus the median
// CPU time (user + system), which a busy machine disturbs less than wall
// time. It needs no external tools.
//
//	runner [-n 20] [-warmup 2] [-dir DIR] [-pre 'SHELL'] [-each FILE] [-tsv] -- CMD [ARGS...] [&& CMD2 ARGS...]
//
// A literal "&&" argument splits the command into steps run one after the
// other (no shell in between); a run's time is the sum, its RSS the largest
// step. -pre runs a shell command before each run, untimed (to prepare a
// change to commit, say). With -each FILE, the i-th run (warm-ups included)
// replaces "{}" in the arguments by line i of FILE, for commands that must
// act on a different task each time.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 20, "timed runs")
	warm := flag.Int("warmup", 2, "untimed runs first")
	dir := flag.String("dir", "", "working directory of the command")
	pre := flag.String("pre", "", "shell command run (untimed) before every run")
	each := flag.String("each", "", "file whose i-th line replaces {} in the arguments of run i")
	tsv := flag.Bool("tsv", false, "print \"median_ms<TAB>p90_ms<TAB>peak_rss_mb<TAB>median_cpu_ms\" only")
	label := flag.String("label", "", "name printed with the figures (default: the command)")
	flag.Parse()
	if flag.NArg() == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: runner [-n R] [-warmup W] [-dir DIR] [-pre SHELL] [-each FILE] [-tsv] -- CMD [ARGS...] [&& CMD ARGS...]")
		os.Exit(2)
	}
	steps := split(flag.Args())
	var lines []string
	if *each != "" {
		var err error
		if lines, err = readLines(*each); err != nil {
			fail(err)
		}
		if len(lines) < *n+*warm {
			fail(fmt.Errorf("%s has %d lines; %d runs need one each", *each, len(lines), *n+*warm))
		}
	}
	if *label == "" {
		*label = strings.Join(flag.Args(), " ")
	}
	var times, cpus []float64
	var peak int64
	for i := 0; i < *warm+*n; i++ {
		if *pre != "" {
			cmd := exec.Command("sh", "-c", *pre)
			cmd.Dir = *dir
			if out, err := cmd.CombinedOutput(); err != nil {
				fail(fmt.Errorf("-pre %q: %v: %s", *pre, err, out))
			}
		}
		arg := ""
		if lines != nil {
			arg = lines[i]
		}
		d, cpu, rss, err := runOnce(steps, *dir, arg)
		if err != nil {
			fail(fmt.Errorf("run %d: %v", i+1, err))
		}
		if i < *warm {
			continue
		}
		times = append(times, float64(d.Microseconds())/1000)
		cpus = append(cpus, float64(cpu.Microseconds())/1000)
		peak = max(peak, rss)
	}
	sort.Float64s(times)
	sort.Float64s(cpus)
	med, p90, cpu := median(times), percentile(times, 0.9), median(cpus)
	rssMB := float64(peak) / 1024 // ru_maxrss is in kilobytes on Linux
	if *tsv {
		fmt.Printf("%.1f\t%.1f\t%.1f\t%.1f\n", med, p90, rssMB, cpu)
		return
	}
	fmt.Printf("%s: median %.1f ms, p90 %.1f ms, min %.1f ms, max %.1f ms, peak RSS %.1f MB, median CPU %.1f ms (%d runs after %d warm-ups)\n",
		*label, med, p90, times[0], times[len(times)-1], rssMB, cpu, len(times), *warm)
}

func split(args []string) [][]string {
	var steps [][]string
	cur := []string{}
	for _, a := range args {
		if a == "&&" {
			if len(cur) > 0 {
				steps = append(steps, cur)
			}
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	if len(cur) > 0 {
		steps = append(steps, cur)
	}
	return steps
}

// runOnce runs the steps in order and returns their total wall time, their
// total CPU time and the largest ru_maxrss (each step's rusage covers its
// own waited-for children too).
func runOnce(steps [][]string, dir, arg string) (time.Duration, time.Duration, int64, error) {
	var total, cpu time.Duration
	var peak int64
	for _, st := range steps {
		argv := make([]string, len(st))
		for i, a := range st {
			argv[i] = strings.ReplaceAll(a, "{}", arg)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		var eb bytes.Buffer
		cmd.Stderr = &eb
		// stdout is discarded by the kernel (/dev/null), as in a script
		// that only wants the exit code.
		t := time.Now()
		err := cmd.Run()
		total += time.Since(t)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(eb.String()))
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss)
			cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total, cpu, peak, nil
}

func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile is the nearest-rank percentile of sorted s.
func percentile(s []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func readLines(p string) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runner:", err)
	os.Exit(1)
}
