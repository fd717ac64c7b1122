package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

func TestRunRejectsBadCommandLines(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("DATABASE_URL", "")
	cases := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 2, "a command is required"},
		{[]string{"launch"}, 2, `unknown command "launch"`},
		{[]string{"keys"}, 2, "keys create --entity"},
		{[]string{"keys", "create"}, 1, "DATABASE_URL is required"},
		{[]string{"serve", "--no-such-flag"}, 2, "no-such-flag"},
		{[]string{"serve", "extra"}, 2, "unexpected arguments"},
		{[]string{"api"}, 1, "TEMPORAL_ADDRESS is required"},
		{[]string{"worker", "--http-addr", "nowhere"}, 1, "TRAINYARD_HTTP_ADDR"},
		{[]string{"migrate"}, 1, "DATABASE_URL is required"},
		{[]string{"infer"}, 1, "DATABASE_URL is required"},
	}
	for _, tc := range cases {
		err := run(context.Background(), tc.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil {
			t.Errorf("run %q succeeded", tc.args)
			continue
		}
		if exitCode(err) != tc.code || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("run %q = %v (exit %d), want exit %d and %q", tc.args, err, exitCode(err), tc.code, tc.contains)
		}
	}
}

func TestRunBadEnvironmentNamesTheVariable(t *testing.T) {
	t.Setenv("TRAINYARD_MAX_BODY_BYTES", "big")
	err := run(context.Background(), []string{"serve"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "TRAINYARD_MAX_BODY_BYTES") {
		t.Fatalf("err = %v", err)
	}
}

func TestKeysCreateAndMigrate(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.URL(t))
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "schema is at version ") {
		t.Fatalf("migrate printed %q", out.String())
	}
	keys := map[string]bool{}
	for range 2 {
		out.Reset()
		if err := run(context.Background(), []string{"keys", "create", "--entity", "my-team"}, &out, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		keys[strings.TrimSpace(out.String())] = true
	}
	if len(keys) != 2 {
		t.Fatalf("two runs printed %d distinct keys: %v", len(keys), keys)
	}
	if err := run(context.Background(), []string{"keys", "create"}, &out, &bytes.Buffer{}); err == nil || exitCode(err) != 2 {
		t.Fatalf("keys create without --entity: %v", err)
	}
}
