package jobspec_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/trainyard/trainyard/jobspec"
)

// TestTokenID: a "token_id:" token names an id only in the spelling
// trainyard writes; every other spelling is an error, not a token's text.
// Tokens without the prefix are text.
func TestTokenID(t *testing.T) {
	t.Parallel()
	for tok, want := range map[string]int{"token_id:0": 0, "token_id:53": 53, "token_id:2147483647": math.MaxInt32} {
		if id, ok := jobspec.TokenID(tok); !ok || id != want {
			t.Errorf("TokenID(%q) = %d, %v; want %d", tok, id, ok, want)
		}
		if err := jobspec.CheckTokenID(tok); err != nil {
			t.Errorf("CheckTokenID(%q) = %v", tok, err)
		}
	}
	for _, tok := range []string{"token_id:-1", "token_id:0x10", "token_id:12345678901234567890123", "token_id:2147483648",
		"token_id:+5", "token_id:007", "token_id:00", "token_id:", "token_id: 5", "token_id:5 ", "token_id:1e3", "token_id:٣"} {
		if id, ok := jobspec.TokenID(tok); ok {
			t.Errorf("TokenID(%q) = %d, ok; want not an id", tok, id)
		}
		if err := jobspec.CheckTokenID(tok); err == nil {
			t.Errorf("CheckTokenID(%q) = nil, want an error", tok)
		}
	}
	for _, tok := range []string{"Hello", " world", "token", "Token_id:5", "token_id"} {
		if _, ok := jobspec.TokenID(tok); ok {
			t.Errorf("TokenID(%q) is an id", tok)
		}
		if err := jobspec.CheckTokenID(tok); err != nil {
			t.Errorf("CheckTokenID(%q) = %v, want nil (a token's text)", tok, err)
		}
	}
}

// TestCheckLogprob: a log probability is finite and at most 0.
func TestCheckLogprob(t *testing.T) {
	t.Parallel()
	for _, lp := range []float64{0, -0.01, -9999, -1e300} {
		if err := jobspec.CheckLogprob(lp); err != nil {
			t.Errorf("CheckLogprob(%v) = %v", lp, err)
		}
	}
	for _, lp := range []float64{1e39, 1e-9, math.Inf(1), math.Inf(-1), math.NaN()} {
		if err := jobspec.CheckLogprob(lp); err == nil {
			t.Errorf("CheckLogprob(%v) = nil, want an error", lp)
		}
	}
}

// TestUnsupportedObjectsEchoTheirInput: an unsupported option that is an
// object is reported with the object sent, not null.
func TestUnsupportedObjectsEchoTheirInput(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"adam_params", "loss_fn_config"} {
		_, errs := jobspec.ParseRLConfig(json.RawMessage(`{"` + field + `": {"beta1": 0.8}}`))
		if len(errs) != 1 {
			t.Fatalf("%s: errors %+v, want one", field, errs)
		}
		got, err := json.Marshal(errs[0].Input)
		if err != nil || string(got) != `{"beta1":0.8}` {
			t.Errorf("%s: input = %s (%v), want the object sent", field, got, err)
		}
	}
}
