package activities

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"syscall"
	"time"
)

// ErrRefusedAddress is returned (wrapped) when training data would be
// fetched from an address the service must not reach for a user.
var ErrRefusedAddress = errors.New("training_data_url resolves to an address this server does not fetch from")

// AddressPolicy decides which addresses server-side fetches of user URLs
// may connect to. It is applied when a connection is dialed, to the address
// DNS resolved to, for the first request and every redirect, so neither a
// DNS name pointing inward nor a redirect gets around it.
//
// An address is judged under every spelling it has: an IPv6 address that
// carries an IPv4 one (IPv4-mapped, -compatible and -translated forms,
// NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4, Teredo, ISATAP) is refused
// when either it or the IPv4 address is. Whatever the mode, unspecified,
// multicast, broadcast, link-local and cloud metadata addresses are
// refused, and so is a loopback address spelled through a translator or
// tunnel (it reaches the translator's loopback, not this machine's).
type AddressPolicy struct {
	// AllowLoopback lets fetches reach this machine's loopback addresses
	// (127.0.0.0/8, ::1): `serve`'s default, where data served from
	// localhost is normal. Private networks stay refused.
	AllowLoopback bool
	// AllowLocal lets fetches reach loopback and private-network addresses
	// (10/8, 172.16/12, 192.168/16, CGNAT 100.64/10, fc00::/7): right where
	// the operator means the service to read its own network, wrong for a
	// shared service, where they are the service's own neighbours.
	AllowLocal bool
	// Refuse, when set, replaces the built-in rule (tests use it to refuse
	// one loopback address while serving from another). Cloud metadata
	// addresses are refused all the same.
	Refuse func(netip.Addr) bool
	// OnRefuse, when set, is told every address refused.
	OnRefuse func(addr string)
}

// refuses reports whether the policy forbids connecting to ip.
func (p AddressPolicy) refuses(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	embedded := embeddedIPv4(ip)
	if metadata[ip] || slices.ContainsFunc(embedded, func(v4 netip.Addr) bool { return metadata[v4] }) {
		return true
	}
	if p.Refuse != nil {
		return p.Refuse(ip)
	}
	if p.refusesOne(ip) {
		return true
	}
	for _, v4 := range embedded {
		// Loopback is this machine only under its own spellings: through
		// NAT64, 6to4 or a tunnel it is some other machine's.
		if v4.IsLoopback() || p.refusesOne(v4) {
			return true
		}
	}
	return false
}

// refusesOne is the rule for one spelling of an address, unmapped.
func (p AddressPolicy) refusesOne(ip netip.Addr) bool {
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsMulticast(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), thisNetwork.Contains(ip), ip == broadcast:
		// Never a data server; 0.0.0.0/8 is dialed as this machine.
		return true
	case ip.IsLoopback():
		return !p.AllowLoopback && !p.AllowLocal
	case ip.IsPrivate(), cgnat.Contains(ip):
		return !p.AllowLocal
	}
	return false
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries (ip is
// unmapped already): where a translator, relay or tunnel would send it.
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	var out []netip.Addr
	switch {
	case ipv4Compatible.Contains(ip) && ip != ipv6Loopback && !ip.IsUnspecified(),
		ipv4Translated.Contains(ip), nat64.Contains(ip):
		out = append(out, v4(12, 13, 14, 15))
	case nat64Local.Contains(ip):
		// RFC 6052 puts the IPv4 address at a place that depends on the
		// operator's prefix length (/48, /56, /64 or /96), which the
		// address does not say: every reading counts but those in
		// 0.0.0.0/8, which are the zero padding of another layout.
		for _, a := range []netip.Addr{v4(6, 7, 9, 10), v4(7, 9, 10, 11), v4(9, 10, 11, 12), v4(12, 13, 14, 15)} {
			if !thisNetwork.Contains(a) {
				out = append(out, a)
			}
		}
	case sixToFour.Contains(ip):
		out = append(out, v4(2, 3, 4, 5))
	case teredo.Contains(ip):
		// The server, and the client's address, stored inverted.
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		out = append(out, v4(4, 5, 6, 7), client)
	}
	// ISATAP: any prefix, interface identifier [0-3]00:5efe:a.b.c.d.
	if b[8]&^0x03 == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, v4(12, 13, 14, 15))
	}
	return out
}

var (
	// cgnat is the carrier-grade NAT range, private in practice.
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetwork is 0.0.0.0/8: Linux dials 0.0.0.0 as the local host.
	thisNetwork  = netip.MustParsePrefix("0.0.0.0/8")
	broadcast    = netip.MustParseAddr("255.255.255.255")
	ipv6Loopback = netip.IPv6Loopback()
	// The IPv6 prefixes that embed an IPv4 address.
	ipv4Compatible = netip.MustParsePrefix("::/96")           // ::a.b.c.d (deprecated)
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT, RFC 2765
	nat64          = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")  // local-use NAT64, RFC 8215
	sixToFour      = netip.MustParsePrefix("2002::/16")       // RFC 3056
	teredo         = netip.MustParsePrefix("2001::/32")       // RFC 4380
	// metadata are the cloud providers' instance metadata services, which
	// hand out credentials: refused in every mode, however spelled.
	metadata = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, DigitalOcean, ...
		netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task credentials
		netip.MustParseAddr("fd00:ec2::254"):   true, // AWS over IPv6
		netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud (inside CGNAT)
		netip.MustParseAddr("168.63.129.16"):   true, // Azure WireServer (a public address)
		netip.MustParseAddr("192.0.0.192"):     true, // Oracle Cloud (legacy)
	}
)

// NewFetchClient returns the HTTP client for user-supplied training data
// URLs: its dialer checks every resolved address against p, it uses no
// proxy from the environment (a proxy would dial for it, unchecked), and it
// follows at most 5 redirects.
func NewFetchClient(p AddressPolicy) *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error { return p.check(address) }}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("training_data_url redirects more than 5 times")
		}
		return nil
	}}
}

// check is the dialer's test of the host:port a connection is about to be
// made to: nil, or an error wrapping ErrRefusedAddress.
func (p AddressPolicy) check(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	if p.refuses(ap.Addr()) {
		if p.OnRefuse != nil {
			p.OnRefuse(address)
		}
		return fmt.Errorf("%w (%s)", ErrRefusedAddress, ap.Addr())
	}
	return nil
}

// dialRefused reports whether err is a refusal by the fetch policy.
func dialRefused(err error) bool { return errors.Is(err, ErrRefusedAddress) }
