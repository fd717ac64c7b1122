package main

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("percentile sorted its argument")
	}
	if got := percentile([]time.Duration{7, 3, 5}, 50); got != 5 {
		t.Errorf("p50 of 3 = %v, want 5", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of none = %v", got)
	}
}

func TestParseGroups(t *testing.T) {
	t.Parallel()
	got, err := parseGroups(" 4x8, 8X16,2×3 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []groupSpec{{4, 8}, {8, 16}, {2, 3}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", "4", "4x", "x8", "0x8", "4x-1", "4y8"} {
		if _, err := parseGroups(bad); err == nil {
			t.Errorf("parseGroups(%q) accepted", bad)
		}
	}
}

func TestSumCounter(t *testing.T) {
	t.Parallel()
	text := `# HELP trainyard_chat_prefill_tokens_saved_total Prompt tokens not prefilled.
# TYPE trainyard_chat_prefill_tokens_saved_total counter
trainyard_chat_prefill_tokens_saved_total{model="a"} 120
trainyard_chat_prefill_tokens_saved_total{model="b",x="}"} 30 1700000000000
trainyard_chat_prefill_tokens_saved_total_other 99
trainyard_chat_tokens_total{kind="prompt"} 7
`
	sum, ok, err := sumCounter(strings.NewReader(text), savedMetric)
	if err != nil || !ok || sum != 150 {
		t.Fatalf("sum = %v, %v, %v; want 150, true, nil", sum, ok, err)
	}
	sum, ok, err = sumCounter(strings.NewReader("plain 3\nplain_x 4\n"), "plain")
	if err != nil || !ok || sum != 3 {
		t.Fatalf("unlabelled: %v, %v, %v; want 3, true, nil", sum, ok, err)
	}
	if _, ok, err := sumCounter(strings.NewReader(text), "trainyard_missing_total"); ok || err != nil {
		t.Fatalf("missing counter: ok %v, err %v", ok, err)
	}
}

func TestLoopTableAndReward(t *testing.T) {
	t.Parallel()
	if r := reward("ab 1!"); r != 0.4 {
		t.Errorf("reward = %v, want 0.4 (2 letters of 5 characters)", r)
	}
	if r := reward(""); r != 0 {
		t.Errorf("reward of an empty reply = %v", r)
	}
	it := iteration{shape: "SmolLM2-135M", spec: groupSpec{4, 8}, index: 1, step: 1,
		rollouts: 10 * time.Second, score: 250 * time.Millisecond, train: 20 * time.Second, chat: 750 * time.Millisecond,
		completionTokens: 4096, trainTokens: 6000, engineTrainTPS: 400}
	var b strings.Builder
	printLoopTable(&b, loopHeader{threads: 2, tokens: 128, backend: "avx2", learningRate: 1e-5}, []iteration{it})
	want := "| SmolLM2-135M | 4×8 | 1 → step 1 | 10.0 s | 410 | 0.25 s | 20.0 s | 300 (step 400) | 0.75 s | 31.0 s |\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table lacks the row %q:\n%s", want, b.String())
	}
}
