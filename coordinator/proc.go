//go:build unix

package coordinator

import (
	"bufio"
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
	Grace  time.Duration
	// OnLine hears every line of output as it comes (the live view, the
	// rate-limit pattern). It must not block.
	OnLine func(line string)
}

// proc is a running agent: its supervisor, the output it has given, and
// how it ended.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	log     *os.File

	mu      sync.Mutex
	pgid    int
	last    time.Time // when the last output came
	tail    []string  // the last tailLines lines
	partial []byte

	done     chan struct{}
	exitCode int
}

const tailLines = 20

// startProc starts the agent under its supervisor.
func startProc(spec procSpec) (*proc, error) {
	in, err := os.Open(spec.Stdin)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	log, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(statR)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "pgid "); ok {
				n, _ := strconv.Atoi(v)
				p.mu.Lock()
				p.pgid = n
				p.mu.Unlock()
			}
		}
		statR.Close()
	}()
	go func() {
		defer readers.Done()
		p.copyOutput(outR, spec.OnLine)
		outR.Close()
	}()
	go func() {
		err := cmd.Wait()
		readers.Wait()
		p.mu.Lock()
		p.exitCode = exitCode(err)
		p.mu.Unlock()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// copyOutput writes the agent's output to the log as it comes, and keeps
// its last lines and the time of its last output.
func (p *proc) copyOutput(r io.Reader, onLine func(string)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = p.log.Write(buf[:n])
			p.mu.Lock()
			p.last = time.Now()
			p.partial = append(p.partial, buf[:n]...)
			var lines []string
			for {
				i := strings.IndexByte(string(p.partial), '\n')
				if i < 0 {
					break
				}
				lines = append(lines, strings.TrimRight(string(p.partial[:i]), "\r"))
				p.partial = p.partial[i+1:]
			}
			if len(p.partial) > 4<<10 {
				// A line without end (a progress bar): taken as it is.
				lines = append(lines, string(p.partial))
				p.partial = nil
			}
			for _, l := range lines {
				p.tail = append(p.tail, l)
			}
			if len(p.tail) > tailLines {
				p.tail = append([]string(nil), p.tail[len(p.tail)-tailLines:]...)
			}
			p.mu.Unlock()
			if onLine != nil {
				for _, l := range lines {
					onLine(l)
				}
			}
		}
		if err != nil {
			p.mu.Lock()
			if len(p.partial) > 0 {
				p.tail = append(p.tail, string(p.partial))
				if onLine != nil {
					onLine(string(p.partial))
				}
				p.partial = nil
			}
			p.mu.Unlock()
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
