package web

import (
	"fmt"
	"net"
	"strings"

	"github.com/orch-tool/orch/workflow"
)

// DefaultAddr is where orch serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7420"

// CheckAddr says whether addr (host:port) is one orch serve may listen on:
// a loopback address or localhost, or, with public, any address. It
// reports whether the address stays on this machine.
//
// A name other than localhost is refused without public even when it
// resolves to loopback: what a name resolves to can change after the check.
func CheckAddr(addr string, public bool) (loopback bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return false, &workflow.UsageError{Msg: fmt.Sprintf("--addr %q is not host:port", addr), Hint: "orch serve --addr 127.0.0.1:7420 (port 0 picks a free one)"}
	}
	loopback = strings.EqualFold(host, "localhost")
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if !loopback && !public {
		where := host
		if where == "" {
			where = "every interface"
		}
		return false, &workflow.UsageError{
			Msg:  fmt.Sprintf("--addr %s is not a loopback address: the board would be open to anyone who can reach %s", addr, where),
			Hint: "add --public to serve beyond this machine (read-only), or use --addr 127.0.0.1:" + port,
		}
	}
	return loopback, nil
}

// ListenError is a failure to listen on the address asked for (in use,
// not this machine's, not permitted).
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return fmt.Sprintf("cannot listen on %s: %v", e.Addr, e.Err) }

func (e *ListenError) Unwrap() error { return e.Err }

// Listen opens the listener for addr.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &ListenError{Addr: addr, Err: err}
	}
	return ln, nil
}

// URL is the address a browser opens for a listener bound to addr: the
// address itself on loopback, else this machine's name (an unspecified
// address such as 0.0.0.0 is nobody's to open).
func URL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
		if hn, err := osHostname(); err == nil && hn != "" {
			host = hn
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
