package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A chat client for the process tests: requests with a key and a request
// id, answers read whole or as server-sent events.

// post sends a chat request and returns the whole answer.
func post(t *testing.T, url, key, body, requestID string) (*http.Response, string) {
	t.Helper()
	resp, raw, err := tryPost(url, key, body, requestID)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// tryPost is post for goroutines other than the test's.
func tryPost(url, key, body, requestID string) (*http.Response, string, error) {
	resp, err := send(url, key, body, requestID)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("read the answer of %s: %w", requestID, err)
	}
	return resp, string(raw), nil
}

// open sends a chat request and returns the response to read.
func open(t *testing.T, url, key, body, requestID string) *http.Response {
	t.Helper()
	resp, err := send(url, key, body, requestID)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func send(url, key, body, requestID string) (*http.Response, error) {
	req, err := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-ID", requestID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("chat %s: %w", requestID, err)
	}
	return resp, nil
}

// sse reads a stream's events (each without its blank line) into a channel
// that closes when the stream ends.
func sse(body io.ReadCloser) <-chan string {
	ch := make(chan string, 4096)
	go func() {
		defer close(ch)
		defer body.Close()
		r := bufio.NewReaderSize(body, 1<<16)
		var ev strings.Builder
		for {
			line, err := r.ReadString('\n')
			if line == "\n" {
				ch <- ev.String()
				ev.Reset()
			} else {
				ev.WriteString(line)
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// lastEvent waits for the stream's end and returns its last event.
func lastEvent(t *testing.T, events <-chan string, within time.Duration) string {
	t.Helper()
	last, deadline := "", time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return last
			}
			last = ev
		case <-deadline:
			t.Fatalf("the stream did not end within %v (last event %q)", within, last)
		}
	}
}
