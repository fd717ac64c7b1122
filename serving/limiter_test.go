package serving

import (
	"testing"

	"github.com/trainyard/trainyard"
)

func TestLimiterGlobalAndPerAccount(t *testing.T) {
	t.Parallel()
	l := newLimiter(3, 2)
	a1, err := l.acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.acquire("a"); err != nil {
		t.Fatal(err)
	}
	_, err = l.acquire("a")
	if trainyard.ErrorCode(err) != trainyard.ELIMIT || trainyard.ErrorMessage(err) != ConcurrencyLimitMessage {
		t.Fatalf("third for a: %v, want ELIMIT %q", err, ConcurrencyLimitMessage)
	}
	if _, err := l.acquire("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.acquire("c"); trainyard.ErrorCode(err) != trainyard.ELIMIT {
		t.Fatalf("past the global cap: %v", err)
	}
	if n, c := l.load(); n != 3 || c != 3 {
		t.Fatalf("load = %d/%d, want 3/3", n, c)
	}
	a1()
	a1() // a second release is a no-op
	if _, err := l.acquire("c"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := l.acquire("d"); trainyard.ErrorCode(err) != trainyard.ELIMIT {
		t.Fatalf("double release must not free two slots: %v", err)
	}
}
