package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpStdio is orch mcp's transport: newline-delimited JSON-RPC on stdin
// and stdout, as the SDK's StdioTransport, which it replaces because that
// one (go-sdk v1.8.0):
//   - ends the session on a line that is not JSON (go-sdk#1209) or not a
//     message: here the line is answered with JSON-RPC's error (-32700,
//     -32600) and the next is read;
//   - runs calls concurrently (go-sdk#26), so a call can overtake one sent
//     before it: here a call is handed to the SDK only once the call before
//     it has been answered, so calls run one at a time in the order they
//     came, as an agent's shell runs its commands;
//   - at the end of stdin drops the answers to calls still running: here the
//     end is handed on only once the last call has been answered.
//
// A line's error answer waits for the call before it too, so every line
// is answered in order. A notification (a cancellation among them) after a
// running call waits with the lines behind it: a verb cannot be stopped
// halfway anyway.
type mcpStdio struct {
	in  io.Reader
	out io.Writer
}

func (t mcpStdio) Connect(context.Context) (mcp.Connection, error) {
	c := &mcpConn{out: t.out, lines: make(chan mcpLine), closed: make(chan struct{}), answered: make(chan struct{})}
	close(c.answered) // no call yet
	go c.readLines(t.in)
	return c, nil
}

type mcpConn struct {
	out     io.Writer
	writeMu sync.Mutex

	lines   chan mcpLine // stdin, line by line; closed at its end
	readErr error        // why lines was closed, when not the end of stdin

	mu       sync.Mutex
	call     jsonrpc.ID    // the call handed on last
	answered chan struct{} // closed once call is answered

	closed    chan struct{}
	closeOnce sync.Once
}

// mcpLine is a line of stdin: a message, or the error that answers it.
type mcpLine struct {
	msg       jsonrpc.Message
	errAnswer []byte
}

// readLines reads stdin line by line, decoded, onto c.lines.
func (c *mcpConn) readLines(in io.Reader) {
	defer close(c.lines)
	r := bufio.NewReader(in)
	for {
		text, tooLong, err := mcpReadLine(r, mcp.DefaultMaxLineLength)
		var line mcpLine
		switch {
		case tooLong:
			line.errAnswer = mcpErrorAnswer(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: a message longer than %d bytes", mcp.DefaultMaxLineLength))
		case len(text) > 0:
			line = mcpDecode(text)
		}
		if line.msg != nil || line.errAnswer != nil {
			select {
			case c.lines <- line:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				c.readErr = err
			}
			return
		}
	}
}

// mcpReadLine reads a line of r, trimmed. Of a line longer than max it
// keeps nothing, and says so.
func mcpReadLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		tooLong = tooLong || len(line)+len(chunk) > max
		if tooLong {
			line = nil
		} else {
			line = append(line, chunk...)
		}
		if err != bufio.ErrBufferFull {
			return bytes.TrimSpace(line), tooLong, err
		}
	}
}

// mcpDecode decodes one line; a line that is not a message gets the error
// JSON-RPC prescribes, with the line's id when it has a valid one.
func mcpDecode(text []byte) mcpLine {
	if !json.Valid(text) {
		return mcpLine{errAnswer: mcpErrorAnswer(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON")}
	}
	if text[0] == '[' {
		return mcpLine{errAnswer: mcpErrorAnswer(nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch (MCP has none since 2025-06-18)")}
	}
	msg, err := jsonrpc.DecodeMessage(text)
	if err != nil {
		var head struct{ ID any }
		var id any
		if json.Unmarshal(text, &head) == nil {
			if _, err := jsonrpc.MakeID(head.ID); err == nil {
				id = head.ID
			}
		}
		return mcpLine{errAnswer: mcpErrorAnswer(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())}
	}
	return mcpLine{msg: msg}
}

// mcpErrorAnswer is a JSON-RPC error answer; its id may be null, which
// the SDK's encoder would leave out.
func mcpErrorAnswer(id any, code int64, message string) []byte {
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	data, _ := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      any       `json:"id"`
		Error   wireError `json:"error"`
	}{"2.0", id, wireError{code, message}})
	return data
}

// Read hands on the next message; a call, an error answer and the end of
// stdin only once the call before has been answered.
func (c *mcpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var line mcpLine
		var more bool
		select {
		case line, more = <-c.lines:
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		req, _ := line.msg.(*jsonrpc.Request)
		isCall := req != nil && req.IsCall()
		if isCall || line.errAnswer != nil || !more {
			c.mu.Lock()
			answered := c.answered
			c.mu.Unlock()
			select {
			case <-answered:
			case <-c.closed:
				return nil, io.EOF
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		switch {
		case !more && c.readErr != nil:
			return nil, c.readErr
		case !more:
			return nil, io.EOF
		case line.errAnswer != nil:
			_ = c.writeLine(line.errAnswer) // a broken stdout is the SDK's to see, at its next write
			continue
		case isCall:
			c.mu.Lock()
			c.call, c.answered = req.ID, make(chan struct{})
			c.mu.Unlock()
		}
		return line.msg, nil
	}
}

func (c *mcpConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		select {
		case <-c.answered:
		default:
			if resp.ID == c.call {
				close(c.answered)
			}
		}
		c.mu.Unlock()
	}
	return err
}

func (c *mcpConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	return err
}

func (c *mcpConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *mcpConn) SessionID() string { return "" }
