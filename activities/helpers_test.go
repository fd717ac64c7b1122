package activities

import (
	"errors"
	"strings"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

// matchesAny reports whether s contains one of the "|"-separated phrases.
func matchesAny(s, phrases string) bool {
	for _, p := range strings.Split(phrases, "|") {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
