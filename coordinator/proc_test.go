//go:build unix

package coordinator

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be the supervisor, as orch is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == SupervisorCommand {
		os.Exit(SuperviseMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func testSpec(t *testing.T, script string) procSpec {
	t.Helper()
	return testSpecIn(t, t.TempDir(), script)
}

// testSpecIn is testSpec in dir: a test process that is killed (and so
// never removes its t.TempDir) works in its parent's directory instead.
func testSpecIn(t *testing.T, dir, script string) procSpec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prompt := filepath.Join(dir, "prompt")
	if err := os.WriteFile(prompt, []byte("the prompt\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	return procSpec{Orch: exe, Script: script, Dir: dir, Env: os.Environ(), Stdin: prompt, Log: filepath.Join(dir, "log"), Grace: 2 * time.Second}
}

func waitProc(t *testing.T, p *proc, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("%v still runs after %v", p, d)
	}
	code, _ := p.exited()
	return code
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestProcOutputAndExit(t *testing.T) {
	spec := testSpec(t, `read line; echo "got: $line"; echo to-stderr >&2; printf 'no newline'; exit 3`)
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	if code := waitProc(t, p, 10*time.Second); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	log, _ := os.ReadFile(spec.Log)
	if string(log) != "got: the prompt\nto-stderr\nno newline" {
		t.Errorf("log = %q", log)
	}
	if got := strings.Join(p.lastLines(2), "|"); got != "to-stderr|no newline" {
		t.Errorf("last lines %q", got)
	}
}

// With a Render (a harness's stream), the log holds what it makes of each
// line, the raw log the bytes as they came, and the tail the rendered lines.
func TestProcRendered(t *testing.T) {
	spec := testSpec(t, `echo '{"event":1}'; echo plain; printf 'last'`)
	var heard []string
	spec.Render = func(l string) []string { heard = append(heard, l); return []string{"shown: " + l} }
	spec.RawLog = filepath.Join(filepath.Dir(spec.Log), "raw")
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitProc(t, p, 10*time.Second)
	log, _ := os.ReadFile(spec.Log)
	raw, _ := os.ReadFile(spec.RawLog)
	if string(log) != "shown: {\"event\":1}\nshown: plain\nshown: last\n" {
		t.Errorf("log = %q", log)
	}
	if string(raw) != "{\"event\":1}\nplain\nlast" {
		t.Errorf("raw = %q", raw)
	}
	if len(heard) != 3 || strings.Join(p.lastLines(1), "") != "shown: last" {
		t.Errorf("rendered %q, tail %q", heard, p.lastLines(3))
	}
}

// A background process the agent leaves behind is ended with it.
func TestProcLeftoversEnded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	spec := testSpec(t, `sleep 300 & echo $! > `+pidFile+`; exit 0`)
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	if code := waitProc(t, p, 10*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	assertGone(t, pidFile)
}

// terminate ends the whole group, the agent's children included, and one
// that ignores SIGTERM gets SIGKILL after the grace period.
func TestProcTerminate(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	spec := testSpec(t, `sh -c 'trap "" TERM; echo $$ > `+pidFile+`; while :; do sleep 0.1; done' & wait`)
	spec.Grace = 300 * time.Millisecond
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidFile)
	p.terminate()
	code := waitProc(t, p, 10*time.Second)
	if code == 0 {
		t.Errorf("exit code 0 after terminate")
	}
	assertGone(t, pidFile)
}

// The agents die with the coordinator: a supervisor whose parent is killed
// ends its group.
func TestProcDiesWithParent(t *testing.T) {
	if os.Getenv("ORCH_PROC_PARENT") == "1" {
		pidFile := os.Getenv("ORCH_PID_FILE")
		spec := testSpecIn(t, filepath.Dir(pidFile), `sleep 300 & echo $! > `+pidFile+`; wait`)
		if _, err := startProc(spec); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		return
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	exe, _ := os.Executable()
	parent := &os.ProcAttr{Env: append(os.Environ(), "ORCH_PROC_PARENT=1", "ORCH_PID_FILE="+pidFile), Files: []*os.File{nil, os.Stderr, os.Stderr}}
	pp, err := os.StartProcess(exe, []string{exe, "-test.run=^TestProcDiesWithParent$"}, parent)
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidFile)
	_ = pp.Kill()
	_, _ = pp.Wait()
	assertGone(t, pidFile)
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if b, err := os.ReadFile(p); err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never written", p)
}

func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for i := 0; i < 250; i++ {
		if !alive(pid) || isZombie(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d outlived its agent", pid)
}

// isZombie: a killed orphan waits for init to reap it.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// A process that leaves the agent's group and session (setsid, a dev
// server, a test watcher) and closes every file it had does not hold the
// run open: the run ends when the agent's shell does, the escaped process
// is ended too, and the run says which it was.
func TestProcEscapedChildEnded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "escaped.pid")
	spec := testSpec(t, `setsid sh -c 'echo $$ > `+pidFile+`; exec sleep 7103' </dev/null >/dev/null 2>&1 & sleep 0.3; echo submitted`)
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	if code := waitProc(t, p, 10*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	assertGone(t, pidFile)
	if runtime.GOOS == "linux" {
		esc := p.escapedProcs()
		if len(esc) != 1 || !strings.Contains(esc[0], "sleep 7103") {
			t.Errorf("escaped = %q, want the sleep", esc)
		}
	}
}

// One that escapes and keeps the output pipe open does not either.
func TestProcEscapedChildHoldingOutput(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "escaped.pid")
	spec := testSpec(t, `setsid sh -c 'echo $$ > `+pidFile+`; exec sleep 7104' & sleep 0.3; echo done`)
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitProc(t, p, 10*time.Second)
	assertGone(t, pidFile)
}

// A run's log is capped at its limit: the head and the newest output are
// kept, and the cut is marked; the run still ends and reads its last lines.
func TestProcLogCapped(t *testing.T) {
	spec := testSpec(t, `echo first line; i=0; while [ $i -lt 3000 ]; do echo "line $i of a long run"; i=$((i+1)); done; echo last line`)
	spec.MaxLog = 8 << 10
	p, err := startProc(spec)
	if err != nil {
		t.Fatal(err)
	}
	waitProc(t, p, 20*time.Second)
	log, err := os.ReadFile(spec.Log)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) > int(spec.MaxLog) {
		t.Errorf("log is %d bytes, over its limit of %d", len(log), spec.MaxLog)
	}
	s := string(log)
	if !strings.HasPrefix(s, "first line\n") || !strings.HasSuffix(s, "line 2999 of a long run\nlast line\n") {
		t.Errorf("log lost its head or its end:\n%s", s)
	}
	if !regexp.MustCompile(`\[orch run: \d+ bytes of output cut here \(run\.max_log\)\]`).MatchString(s) {
		t.Errorf("log has no mark of the cut:\n%s", s)
	}
	if got := p.lastLines(1); len(got) != 1 || got[0] != "last line" {
		t.Errorf("last line %q", got)
	}
}
