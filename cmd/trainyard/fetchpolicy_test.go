package main

import (
	"testing"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/internal/config"
)

// TestFetchPolicy: TRAINYARD_FETCH_ALLOW_LOCAL decides when set; unset,
// `serve` reads from loopback only and `api`/`worker` from neither.
func TestFetchPolicy(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, c := range []struct {
		name          string
		allowLocal    *bool
		fetchLoopback bool
		want          activities.AddressPolicy
	}{
		{"serve, unset", nil, true, activities.AddressPolicy{AllowLoopback: true}},
		{"api or worker, unset", nil, false, activities.AddressPolicy{}},
		{"serve, true", &yes, true, activities.AddressPolicy{AllowLocal: true}},
		{"serve, false", &no, true, activities.AddressPolicy{}},
		{"worker, true", &yes, false, activities.AddressPolicy{AllowLocal: true}},
	} {
		a := &app{cfg: config.Config{FetchAllowLocal: c.allowLocal}, fetchLoopback: c.fetchLoopback}
		if got := a.fetchPolicy(); got.AllowLocal != c.want.AllowLocal || got.AllowLoopback != c.want.AllowLoopback {
			t.Errorf("%s: policy = %+v, want %+v", c.name, got, c.want)
		}
	}
}
