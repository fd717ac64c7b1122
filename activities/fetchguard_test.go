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

func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	shared, local := AddressPolicy{}, AddressPolicy{AllowLocal: true}
	for _, c := range []struct {
		addr              string
		sharedOK, serveOK bool
	}{
		{"8.8.8.8", true, true},
		{"2606:4700:4700::1111", true, true},
		{"127.0.0.1", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"10.1.2.3", false, true},
		{"172.16.0.9", false, true},
		{"192.168.1.1", false, true},
		{"100.64.0.1", false, true},
		{"fd12::1", false, true},
		{"169.254.169.254", false, false},
		{"fe80::1", false, false},
		{"fd00:ec2::254", false, false},
		{"0.0.0.0", false, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
	} {
		ip := netip.MustParseAddr(c.addr)
		if got := !shared.refuses(ip); got != c.sharedOK {
			t.Errorf("%s: allowed by a shared service = %v, want %v", c.addr, got, c.sharedOK)
		}
		if got := !local.refuses(ip); got != c.serveOK {
			t.Errorf("%s: allowed in serve = %v, want %v", c.addr, got, c.serveOK)
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
