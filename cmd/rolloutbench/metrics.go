package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// savedMetric counts the prompt tokens the service did not prefill because a request shared them with
// another (a group's common prompt); a service without it reports nothing, and the benchmark 0.
const savedMetric = "trainyard_chat_prefill_tokens_saved_total"

// scrapeCounter sums every series of the counter name on the service's /metrics (no key needed); ok is
// false when the service exports no such counter.
func scrapeCounter(ctx context.Context, api, name string) (sum float64, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/metrics", nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return sumCounter(resp.Body, name)
}

// sumCounter sums the series of the counter name in Prometheus's text format.
func sumCounter(r io.Reader, name string) (sum float64, ok bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, found := strings.CutPrefix(line, name)
		if !found || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a comment, another metric, or one whose name only starts with this one
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest) // the value, then an optional timestamp
		if len(fields) == 0 {
			return 0, false, fmt.Errorf("/metrics: %q has no value", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		sum, ok = sum+v, true
	}
	return sum, ok, sc.Err()
}
