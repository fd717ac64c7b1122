package devstack

import (
	"fmt"
	"net"
	"strconv"
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
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("cannot listen on %s (is another instance running?): %w", addr, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// freePort returns a currently unused TCP port on host, for the internal
// services (history, matching, worker) that nobody dials from outside.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// splitHostPort splits an address already validated by reserveAddr.
func splitHostPort(addr string) (string, int) {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return host, p
}
