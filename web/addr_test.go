package web

import (
	"errors"
	"strings"
	"testing"

	"github.com/orch-tool/orch/workflow"
)

// TestCheckAddr: loopback addresses and localhost are served; any other
// address only with --public; a name that resolves to loopback is still a
// name (what it resolves to may change).
func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr     string
		public   bool
		loopback bool
		refused  string
	}{
		{"127.0.0.1:7420", false, true, ""},
		{"127.0.0.1:0", false, true, ""},
		{"127.1.2.3:80", false, true, ""},
		{"[::1]:7420", false, true, ""},
		{"localhost:7420", false, true, ""},
		{"LOCALHOST:7420", false, true, ""},
		{"0.0.0.0:7420", false, false, "not a loopback address"},
		{":7420", false, false, "every interface"},
		{"[::]:7420", false, false, "not a loopback address"},
		{"192.168.1.10:7420", false, false, "not a loopback address"},
		{"myhost.example:7420", false, false, "not a loopback address"},
		{"0.0.0.0:7420", true, false, ""},
		{":7420", true, false, ""},
		{"192.168.1.10:7420", true, false, ""},
		{"127.0.0.1:7420", true, true, ""},
		{"127.0.0.1", false, false, "not host:port"},
		{"127.0.0.1:", false, false, "not host:port"},
		{"", false, false, "not host:port"},
	} {
		loop, err := CheckAddr(c.addr, c.public)
		if c.refused == "" {
			if err != nil || loop != c.loopback {
				t.Errorf("CheckAddr(%q, %v) = %v, %v; want %v, nil", c.addr, c.public, loop, err, c.loopback)
			}
			continue
		}
		var usage *workflow.UsageError
		if !errors.As(err, &usage) || !strings.Contains(usage.Msg, c.refused) {
			t.Errorf("CheckAddr(%q, %v) = %v; want a usage error saying %q", c.addr, c.public, err, c.refused)
			continue
		}
		if strings.Contains(c.refused, "loopback") && !strings.Contains(usage.Hint, "--public") {
			t.Errorf("CheckAddr(%q): the hint %q does not name --public", c.addr, usage.Hint)
		}
	}
}

// TestHostAllowed: the Host header must name this server: the address it
// listens on or localhost, with its port. With --public any IP address and
// the machine's own name are accepted too, never another name (DNS
// rebinding needs a name the attacker controls).
func TestHostAllowed(t *testing.T) {
	defer func(f func() (string, error)) { osHostname = f }(osHostname)
	osHostname = func() (string, error) { return "box.lan", nil }

	loop := hostAllowed("127.0.0.1:7420", false)
	for host, want := range map[string]bool{
		"127.0.0.1:7420":       true,
		"localhost:7420":       true,
		"LocalHost:7420":       true,
		"127.0.0.1:7421":       false,
		"127.0.0.2:7420":       false,
		"[::1]:7420":           false,
		"evil.example:7420":    false,
		"localhost.evil:7420":  false,
		"box.lan:7420":         false,
		"127.0.0.1":            false, // port 80
		"192.168.1.10:7420":    false,
		"7f000001.rbndr.us:74": false,
	} {
		if got := loop(host); got != want {
			t.Errorf("loopback server: Host %q allowed=%v, want %v", host, got, want)
		}
	}
	v6 := hostAllowed("[::1]:7420", false)
	if !v6("[::1]:7420") || v6("127.0.0.1:7420") || !v6("localhost:7420") {
		t.Errorf("[::1] server: wrong answers")
	}
	pub := hostAllowed("0.0.0.0:7420", true)
	for host, want := range map[string]bool{
		"192.168.1.10:7420": true,
		"[fe80::1]:7420":    true,
		"box.lan:7420":      true,
		"box:7420":          true,
		"localhost:7420":    true,
		"evil.example:7420": false,
		"box.lan:80":        false,
	} {
		if got := pub(host); got != want {
			t.Errorf("public server: Host %q allowed=%v, want %v", host, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	defer func(f func() (string, error)) { osHostname = f }(osHostname)
	osHostname = func() (string, error) { return "box.lan", nil }
	for addr, want := range map[string]string{
		"127.0.0.1:7420":    "http://127.0.0.1:7420/",
		"[::1]:7420":        "http://[::1]:7420/",
		"0.0.0.0:7420":      "http://box.lan:7420/",
		"[::]:7420":         "http://box.lan:7420/",
		"192.168.1.10:8080": "http://192.168.1.10:8080/",
	} {
		if got := URL(addr); got != want {
			t.Errorf("URL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestListenError: an address in use is a ListenError naming it.
func TestListenError(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String())
	var le *ListenError
	if !errors.As(err, &le) || le.Addr != ln.Addr().String() || !strings.Contains(err.Error(), "cannot listen on "+ln.Addr().String()) {
		t.Errorf("Listen on a port in use: %v", err)
	}
}
