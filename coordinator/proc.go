//go:build unix

package coordinator

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procSpec is how to start one agent.
type procSpec struct {
	Orch   string   // the orch executable (the supervisor is `orch __supervise`)
	Script string   // run by sh -c
	Dir    string   // the task's worktree
	Env    []string // the whole environment
	Stdin  string   // a file: the prompt
	Log    string   // the attempt's log file (created; output is appended)
	MaxLog int64    // the log's cap in bytes (0: none): see cappedLog
	Grace  time.Duration
	// Render, when set, turns each line of a harness's structured stream
	// into the lines the log shows (coordinator/harness); the stream
	// itself goes to RawLog, capped like the log.
	Render func(line string) []string
	RawLog string
	// OnLine, without a Render, hears every line of output as it comes
	// (the harness reader of a plain-text run). It must not block.
	OnLine func(line string)
}

// proc is a running agent: its supervisor, the output it has given, and
// how it ended.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	log     *cappedLog

	mu      sync.Mutex
	pgid    int
	last    time.Time // when the last output came
	tail    []string  // the last tailLines lines
	partial []byte
	escaped []string // processes that left the agent's group, which the supervisor ended

	done     chan struct{}
	exitCode int
}

const tailLines = 20

// maxLineKept is how much of one line of output the tail keeps: a line of
// 30 kB (a minified file, a base64 blob) is cut there.
const maxLineKept = 4 << 10

// outputDrain is how long the output is read after the supervisor has
// exited: what the agent printed last is still in the pipe, but a process
// that escaped even the supervisor (another PID namespace) may hold it open
// for ever.
const outputDrain = 2 * time.Second

// startProc starts the agent under its supervisor.
func startProc(spec procSpec) (*proc, error) {
	in, err := os.Open(spec.Stdin)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	log, err := openCappedLog(spec.Log, spec.MaxLog)
	if err != nil {
		return nil, err
	}
	var raw *cappedLog
	if spec.Render != nil && spec.RawLog != "" {
		if raw, err = openCappedLog(spec.RawLog, spec.MaxLog); err != nil {
			log.Close()
			return nil, err
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	statR, statW, err := os.Pipe()
	if err != nil {
		log.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        spec.Orch,
		Args:        []string{"orch", SupervisorCommand, strconv.Itoa(os.Getpid()), spec.Grace.String(), spec.Script},
		Dir:         spec.Dir,
		Env:         spec.Env,
		Stdin:       in,
		Stdout:      outW,
		Stderr:      outW,
		ExtraFiles:  []*os.File{statW},
		SysProcAttr: supervisorAttr(),
	}
	p := &proc{cmd: cmd, log: log, done: make(chan struct{})}
	p.started = time.Now()
	p.last = p.started
	err = cmd.Start()
	outW.Close()
	statW.Close()
	if err != nil {
		outR.Close()
		statR.Close()
		log.Close()
		if raw != nil {
			raw.Close()
		}
		return nil, err
	}
	// The status pipe is the supervisor's alone (it keeps it from the
	// agent: close-on-exec), so it ends when the supervisor does. The
	// output pipe is the agent's and its children's: the run's end does
	// not wait for every one of them to close it (outputDrain).
	statDone := make(chan struct{})
	go func() {
		defer close(statDone)
		sc := bufio.NewScanner(statR)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "pgid "); ok {
				n, _ := strconv.Atoi(v)
				p.mu.Lock()
				p.pgid = n
				p.mu.Unlock()
			} else if v, ok := strings.CutPrefix(line, "escaped "); ok {
				p.mu.Lock()
				p.escaped = append(p.escaped, v)
				p.mu.Unlock()
			}
		}
		statR.Close()
	}()
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		var rw io.Writer
		if raw != nil {
			rw = raw
		}
		render := spec.Render
		if render == nil && spec.OnLine != nil {
			// The log keeps the bytes; the reader hears the lines.
			on := spec.OnLine
			render = func(l string) []string { on(l); return nil }
			p.copyOutput(outR, render, nil, true)
			return
		}
		p.copyOutput(outR, render, rw, false)
	}()
	go func() {
		err := cmd.Wait()
		<-statDone
		select {
		case <-outDone:
		case <-time.After(outputDrain):
			outR.Close() // ends the read that waits
			<-outDone
		}
		outR.Close()
		p.mu.Lock()
		p.exitCode = exitCode(err)
		p.mu.Unlock()
		log.Close()
		if raw != nil {
			raw.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// escapedProcs are the processes that had left the agent's process group
// when its shell ended, and that the supervisor ended: "PID COMMAND".
func (p *proc) escapedProcs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.escaped...)
}

// copyOutput writes the agent's output to the log as it comes, and keeps
// its last lines and the time of its last output. With a Render (a
// harness's structured stream), the log holds what Render makes of each
// line, and the bytes as they came go to the raw log.
func (p *proc) copyOutput(r io.Reader, render func(string) []string, raw io.Writer, hearOnly bool) {
	buf := make([]byte, 32<<10)
	// A line without end (a progress bar) is taken as it is past this; a
	// stream's event can be long (a tool's whole output), and is read whole.
	maxPartial := 4 << 10
	if render != nil && !hearOnly {
		maxPartial = 1 << 20
	}
	emit := func(lines []string) {
		var shown []string
		for _, l := range lines {
			if render == nil || hearOnly {
				if render != nil {
					render(l)
				}
				shown = append(shown, l)
				continue
			}
			out := render(l)
			shown = append(shown, out...)
			for _, o := range out {
				_, _ = io.WriteString(p.log, o+"\n")
			}
		}
		p.mu.Lock()
		for _, l := range shown {
			if len(l) > maxLineKept {
				l = l[:maxLineKept]
			}
			p.tail = append(p.tail, l)
		}
		if len(p.tail) > tailLines {
			p.tail = append([]string(nil), p.tail[len(p.tail)-tailLines:]...)
		}
		p.mu.Unlock()
	}
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if render == nil || hearOnly {
				_, _ = p.log.Write(buf[:n])
			} else if raw != nil {
				_, _ = raw.Write(buf[:n])
			}
			p.mu.Lock()
			p.last = time.Now()
			p.mu.Unlock()
			p.partial = append(p.partial, buf[:n]...)
			var lines []string
			for {
				i := bytes.IndexByte(p.partial, '\n')
				if i < 0 {
					break
				}
				lines = append(lines, strings.TrimRight(string(p.partial[:i]), "\r"))
				p.partial = p.partial[i+1:]
			}
			if len(p.partial) > maxPartial {
				lines = append(lines, string(p.partial))
				p.partial = nil
			}
			emit(lines)
		}
		if err != nil {
			if len(p.partial) > 0 {
				emit([]string{string(p.partial)})
				p.partial = nil
			}
			return
		}
	}
}

// lastOutput is when the agent last wrote anything (its start, before).
func (p *proc) lastOutput() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// lastLines are the agent's last n lines of output.
func (p *proc) lastLines(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tail) > n {
		return append([]string(nil), p.tail[len(p.tail)-n:]...)
	}
	return append([]string(nil), p.tail...)
}

// terminate asks the supervisor to end the agent's group (SIGTERM, then
// SIGKILL after the grace period); kill, past that, ends both at once.
func (p *proc) terminate() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

func (p *proc) kill() {
	p.mu.Lock()
	pgid := p.pgid
	p.mu.Unlock()
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	_ = p.cmd.Process.Kill()
}

// exited returns the exit code once the agent has ended.
func (p *proc) exited() (int, bool) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.exitCode, true
	default:
		return 0, false
	}
}

func (p *proc) String() string { return fmt.Sprintf("pid %d", p.cmd.Process.Pid) }

// cappedLog is a run's log, at most max bytes however much the agent
// prints (run.max_log): past it, the head (a quarter) stays, then a line
// that says how much was cut, then the newest output (half), so that the
// start and the end of a run are always there to read.
type cappedLog struct {
	f         *os.File
	max       int64
	size      int64
	head      int64 // where the mark of the cut goes
	tailStart int64 // where the output after the head starts (after the mark)
	cut       int64 // bytes cut so far
}

func openCappedLog(path string, max int64) (*cappedLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &cappedLog{f: f, max: max, size: fi.Size(), head: max / 4}
	l.tailStart = l.head
	return l, nil
}

func (l *cappedLog) Write(p []byte) (int, error) {
	n := len(p)
	if l.max > 0 && l.size < l.head && l.size+int64(len(p)) > l.max {
		// The head is filled first, whole: it is never cut.
		k := l.head - l.size
		if _, err := l.f.WriteAt(p[:k], l.size); err != nil {
			return 0, err
		}
		l.size, p = l.head, p[k:]
	}
	if l.max <= 0 || l.size+int64(len(p)) <= l.max {
		_, err := l.f.WriteAt(p, l.size)
		l.size += int64(len(p))
		return n, err
	}
	keep := l.max / 2
	var tail []byte
	if int64(len(p)) >= keep {
		l.cut += l.size - l.tailStart + int64(len(p)) - keep
		tail = p[int64(len(p))-keep:]
	} else {
		from := max(l.tailStart, l.size-(keep-int64(len(p))))
		tail = make([]byte, l.size-from, l.size-from+int64(len(p)))
		if _, err := l.f.ReadAt(tail, from); err != nil {
			return 0, err
		}
		tail = append(tail, p...)
		l.cut += from - l.tailStart
	}
	mark := fmt.Sprintf("\n[orch run: %d bytes of output cut here (run.max_log)]\n", l.cut)
	if _, err := l.f.WriteAt(append([]byte(mark), tail...), l.head); err != nil {
		return 0, err
	}
	l.tailStart = l.head + int64(len(mark))
	l.size = l.tailStart + int64(len(tail))
	return n, l.f.Truncate(l.size)
}

func (l *cappedLog) Close() error { return l.f.Close() }
