package main

import (
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The testscript commands of orch serve's scripts (testdata/script/serve*.txtar).

// free-port VAR: set VAR to a TCP port of 127.0.0.1 that nothing listens on
// (the kernel picks it; another process could take it before the script
// uses it, which the kernel's port allocation makes unlikely).
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: free-port VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("free-port: %v", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	ts.Setenv(args[0], port)
}

// http-get [-status N] [-host HOST] URL: GET URL (waiting up to 30 s for a
// server that is starting) and write the body to stdout; the answer's
// status must be N (default 200). -host sends another Host header.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("http-get", flag.ContinueOnError)
	status := fs.Int("status", http.StatusOK, "")
	host := fs.String("host", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || neg {
		ts.Fatalf("usage: http-get [-status N] [-host HOST] URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var resp *http.Response
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fs.Arg(0), nil)
		if err != nil {
			ts.Fatalf("http-get: %v", err)
		}
		if *host != "" {
			req.Host = *host
		}
		resp, err = http.DefaultClient.Do(req)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			ts.Fatalf("http-get %s: %v", fs.Arg(0), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.Fatalf("http-get %s: %v", fs.Arg(0), err)
	}
	_, _ = ts.Stdout().Write(body)
	if resp.StatusCode != *status {
		ts.Fatalf("http-get %s: status %d, want %s", fs.Arg(0), resp.StatusCode, strconv.Itoa(*status))
	}
}
