// Package e2e holds trainyard's end-to-end tests: the HTTP API, a real
// Temporal server (internal/devstack, in the test process), workers (in the
// test process, or as separate processes that a fault test kills), real
// PostgreSQL and real S3, training the built-in tiny-chat model.
//
// Run them with `go test ./internal/e2e/`; benchmarks with
// `go test ./internal/e2e/ -run '^$' -bench .`. Set
// TRAINYARD_RECORD_HISTORIES=1 to rewrite the workflow histories that
// workflows' replay tests read (workflows/testdata).
package e2e
