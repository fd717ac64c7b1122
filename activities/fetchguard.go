package activities

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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
type AddressPolicy struct {
	// AllowLocal lets fetches reach loopback and private-network
	// addresses: right for `serve` on a developer's machine (data served
	// from localhost), wrong for a shared service, where they are the
	// service's own neighbours. Link-local addresses (cloud metadata
	// services) are refused either way.
	AllowLocal bool
	// Refuse, when set, replaces the built-in rule (tests use it to refuse
	// one loopback address while serving from another).
	Refuse func(netip.Addr) bool
	// OnRefuse, when set, is told every address refused.
	OnRefuse func(addr string)
}

// refuses reports whether the policy forbids connecting to ip.
func (p AddressPolicy) refuses(ip netip.Addr) bool {
	if p.Refuse != nil {
		return p.Refuse(ip)
	}
	ip = ip.Unmap()
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsMulticast(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip == broadcast, ip == awsMetadataV6:
		// Never a data server: 169.254.169.254 and its IPv6 twin are
		// cloud metadata services.
		return true
	case ip.IsLoopback(), ip.IsPrivate(), cgnat.Contains(ip):
		return !p.AllowLocal
	}
	return false
}

var (
	// cgnat is the carrier-grade NAT range, private in practice.
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// awsMetadataV6 is the IPv6 address of EC2's metadata service.
	awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")
	broadcast     = netip.MustParseAddr("255.255.255.255")
)

// NewFetchClient returns the HTTP client for user-supplied training data
// URLs: its dialer checks every resolved address against p, it uses no
// proxy from the environment (a proxy would dial for it, unchecked), and it
// follows at most 5 redirects.
func NewFetchClient(p AddressPolicy) *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
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
		}}
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

// dialRefused reports whether err is a refusal by the fetch policy.
func dialRefused(err error) bool { return errors.Is(err, ErrRefusedAddress) }
