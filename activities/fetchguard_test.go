package activities

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// TestAddressPolicy judges every spelling of an address in each mode: a
// shared service (public addresses only), `serve`'s default (loopback too)
// and TRAINYARD_FETCH_ALLOW_LOCAL=true (private networks too). It asks the
// guard only; nothing is dialed.
func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	shared, serve, local := AddressPolicy{}, AddressPolicy{AllowLoopback: true}, AddressPolicy{AllowLocal: true}
	const (
		no      = "---" // refused in every mode
		public  = "sSl" // allowed in every mode
		loop    = "-Sl" // serve's default and allow-local
		private = "--l" // allow-local only
	)
	for _, c := range []struct {
		addr string
		want string // s/S/l when shared/serve/local allow it, - when refused
	}{
		{"8.8.8.8", public},
		{"2606:4700:4700::1111", public},
		{"127.0.0.1", loop},
		{"127.1.2.3", loop},
		{"::1", loop},
		{"::ffff:127.0.0.1", loop},
		{"10.1.2.3", private},
		{"172.16.0.9", private},
		{"192.168.1.1", private},
		{"100.64.0.1", private},
		{"fd12::1", private},
		{"::ffff:10.1.2.3", private},
		{"fe80::1", no},
		{"fe80::1%eth0", no},
		{"0.0.0.0", no},
		{"0.1.2.3", no},
		{"::", no},
		{"224.0.0.1", no},
		{"ff02::1", no},
		{"255.255.255.255", no},

		// Cloud metadata services, every spelling, every mode.
		{"169.254.169.254", no},
		{"::ffff:169.254.169.254", no},
		{"::a9fe:a9fe", no},                          // IPv4-compatible
		{"::ffff:0:a9fe:a9fe", no},                   // IPv4-translated
		{"64:ff9b::a9fe:a9fe", no},                   // NAT64
		{"64:ff9b::169.254.169.254", no},             // NAT64, dotted
		{"64:ff9b:1::a9fe:a9fe", no},                 // local-use NAT64, /96 layout
		{"64:ff9b:1:a9fe:a9:fe00::", no},             // local-use NAT64, /48 layout
		{"2002:a9fe:a9fe::1", no},                    // 6to4
		{"2001:0:4136:e378:8000:63bf:5601:5601", no}, // Teredo client 169.254.169.254 (inverted)
		{"2001:db8::5efe:a9fe:a9fe", no},             // ISATAP
		{"fd00:ec2::254", no},
		{"fd00:ec2::254%eth0", no},
		{"100.100.100.200", no},
		{"::ffff:100.100.100.200", no},
		{"::6464:64c8", no},
		{"64:ff9b::6464:64c8", no},
		{"2002:6464:64c8::", no},
		{"169.254.170.2", no},
		{"168.63.129.16", no},
		{"64:ff9b::a83f:8110", no},
		{"192.0.0.192", no},

		// Loopback spelled through a translator or a tunnel reaches some
		// other machine's loopback: refused even where loopback is allowed.
		{"::7f00:1", no},
		{"::127.0.0.1", no},
		{"::ffff:0:7f00:1", no},
		{"64:ff9b::7f00:1", no},
		{"64:ff9b:1::7f00:1", no},
		{"2002:7f00:1::", no},
		{"2001:db8::200:5efe:7f00:1", no},

		// Private networks spelled through one: as private as themselves.
		{"::a01:203", private},
		{"64:ff9b::a01:203", private},
		{"64:ff9b::192.168.1.1", private},
		{"64:ff9b:1::c0a8:101", private},
		{"2002:c0a8:101::1", private},
		{"2001:0:4136:e378:8000:63bf:f5fe:fdfc", private}, // Teredo client 10.1.2.3
		{"64:ff9b::6440:1", private},                      // 100.64.0.1

		// Public addresses spelled the same ways stay public.
		{"64:ff9b::808:808", public},
		{"64:ff9b::8.8.8.8", public},
		{"64:ff9b:1::808:808", public},
		{"64:ff9b:1:808:8:800::", public}, // /48 layout
		{"2002:808:808::1", public},
		{"::808:808", public},
	} {
		ip := netip.MustParseAddr(c.addr)
		for i, p := range []AddressPolicy{shared, serve, local} {
			mode := []string{"a shared service", "serve's default", "allow-local"}[i]
			if got, want := !p.refuses(ip), c.want[i] != '-'; got != want {
				t.Errorf("%s: allowed by %s = %v, want %v", c.addr, mode, got, want)
			}
		}
	}
}

// TestAddressPolicyCheck: the dialer's test takes the host:port it is
// about to connect to, reports the refusal and wraps ErrRefusedAddress;
// metadata stays refused under a test's own rule. Nothing is dialed.
func TestAddressPolicyCheck(t *testing.T) {
	t.Parallel()
	var told []string
	p := AddressPolicy{AllowLoopback: true, OnRefuse: func(a string) { told = append(told, a) }}
	if err := p.check("127.0.0.1:8080"); err != nil {
		t.Errorf("loopback in serve's default: %v", err)
	}
	for _, a := range []string{"[64:ff9b::7f00:1]:80", "[64:ff9b::a9fe:a9fe]:80", "100.100.100.200:80", "[::ffff:10.0.0.1]:443", "nonsense"} {
		if err := p.check(a); !dialRefused(err) {
			t.Errorf("%s: err = %v, want a refusal", a, err)
		}
	}
	if len(told) != 4 {
		t.Errorf("told of %v, want the 4 addresses refused", told)
	}
	anything := AddressPolicy{Refuse: func(netip.Addr) bool { return false }}
	for _, a := range []string{"169.254.169.254:80", "[2002:6464:64c8::]:80"} {
		if err := anything.check(a); !dialRefused(err) {
			t.Errorf("%s under a rule that refuses nothing: err = %v, want a refusal", a, err)
		}
	}
}

// TestFetchRefusedAtDialTime: the check runs on the address a connection is
// dialed to, after DNS and on every redirect. Only loopback servers are used:
// 127.0.0.1 serves, 127.0.0.2 and names resolving to refused addresses stand
// for the service's neighbours; the dialer records what it refused.
func TestFetchRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	data := sftData(2)
	inner, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	innerSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(data) }))
	innerSrv.Listener.Close()
	innerSrv.Listener = inner
	innerSrv.Start()
	t.Cleanup(innerSrv.Close)
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, innerSrv.URL+"/secret", http.StatusFound)
		default:
			w.Write(data)
		}
	}))
	t.Cleanup(outer.Close)

	var mu sync.Mutex
	var refused []string
	policy := AddressPolicy{
		Refuse: func(ip netip.Addr) bool { return ip == netip.MustParseAddr("127.0.0.2") || ip.Is6() },
		OnRefuse: func(addr string) {
			mu.Lock()
			defer mu.Unlock()
			refused = append(refused, addr)
		},
	}
	f := newFixture(t, Config{}, nil)
	f.acts.d.HTTP = NewFetchClient(policy)
	fetch := func(url string) error {
		job := f.newJob(t, f.model, trainyard.JobKindSFT, jobspec.JobConfig{TrainingDataURL: url}, nil)
		return f.run(t, f.acts.Fetch, FetchInput{JobID: job.ID}, nil)
	}
	if err := fetch(outer.URL + "/data"); err != nil {
		t.Fatalf("an allowed address: %v", err)
	}
	for _, url := range []string{innerSrv.URL + "/secret", outer.URL + "/redirect",
		strings.Replace(innerSrv.URL, "127.0.0.2", "[::1]", 1) + "/v6"} {
		err := fetch(url)
		var appErr *temporal.ApplicationError
		if !errorsAs(err, &appErr) || !appErr.NonRetryable() || !strings.Contains(appErr.Message(), "does not fetch from") {
			t.Errorf("%s: err = %v, want a final refusal", url, err)
		}
	}
	// A name is checked by the addresses it resolves to: "localhost" is
	// refused by a shared service's policy at each of its addresses.
	var named []string
	f.acts.d.HTTP = NewFetchClient(AddressPolicy{OnRefuse: func(addr string) {
		mu.Lock()
		defer mu.Unlock()
		named = append(named, addr)
	}})
	port := outer.URL[strings.LastIndex(outer.URL, ":"):]
	if err := fetch("http://localhost" + port + "/data"); err == nil || !strings.Contains(err.Error(), "does not fetch from") {
		t.Errorf("localhost under a shared service's policy: err = %v, want a refusal", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(named) == 0 {
		t.Error("no resolved address of localhost was refused")
	}
	for _, a := range named {
		if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("refused %q, want a loopback address (what the name resolved to)", a)
		}
	}
	if len(refused) != 3 || !strings.HasPrefix(refused[0], "127.0.0.2:") || !strings.HasPrefix(refused[1], "127.0.0.2:") ||
		!strings.HasPrefix(refused[2], "[::1]:") {
		t.Fatalf("refused %v", refused)
	}
}
