package devstack

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// reserveAddr checks that addr can be listened on and returns it with a
// concrete port (a free one when the port is 0). Checking first turns a busy
// port into a clear error: the Temporal server and the UI server both exit
// the process when their listener fails.
func reserveAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q is not host:port: %w", addr, err)
	}
	if host == "" {
		return "", fmt.Errorf("address %q has no host; use e.g. 127.0.0.1:%s", addr, port)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("address %q has an invalid port", addr)
	}
	if port == "0" {
		p, err := freePort(host)
		if err != nil {
			return "", err
		}
		return net.JoinHostPort(host, strconv.Itoa(p)), nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("cannot listen on %s (is another instance running?): %w", addr, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePort returns a currently unused TCP port on host, for the internal
// services (history, matching, worker) that nobody dials from outside and for
// addresses given with port 0.
//
// The port is checked free, released, and bound by the Temporal server or the
// UI a little later; whatever takes it in between makes that bind fail, and
// both servers then exit the whole process (a Fatal log, silent under a quiet
// logger). A port from the kernel's ephemeral range can be taken in between
// by any outgoing connection or port-0 listener of any process, which busy
// test runs make often enough to matter, so the port comes from below that
// range, where only explicit binds land, and is never handed out twice by one
// process.
func freePort(host string) (int, error) {
	lo, hi := belowEphemeral()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 64 {
		if hi <= lo {
			break
		}
		p := lo + rand.IntN(hi-lo)
		if handedOut[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		handedOut[p] = true
		return p, nil
	}
	// No room below the ephemeral range (or no luck): let the kernel pick.
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// belowEphemeral is the range [lo, hi) of ports freePort picks from: from
// 15000 up to the start of the kernel's ephemeral range (Linux's default
// starts at 32768; elsewhere that default is assumed).
func belowEphemeral() (lo, hi int) {
	hi = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				hi = v
			}
		}
	}
	return 15000, hi
}

// splitHostPort splits an address already validated by reserveAddr.
func splitHostPort(addr string) (string, int) {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return host, p
}
