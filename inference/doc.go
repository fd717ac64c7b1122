// Package inference runs chat completions apart from the API: `trainyard
// infer` processes serve the base models they hold (with their adapters),
// keep a row of the inference registry current (presence.go), and the API
// forwards each chat request to one of them (router.go, relay.go).
//
//	client ──> api: auth, 422s, model → base ──Router.Forward──> infer: auth, serving (429, 404, 400) ──> engine
//	                 │ registry snapshot (1 s)                       │ heartbeat (2 s): address, models, load
//	                 └────────────── storage/postgres inference_processes ─────┘
//
// A row is live while its lease (three heartbeats, from the database's clock)
// has not run out. The router picks, among the live, non-draining processes
// holding the request's base model, the least loaded; it cancels the calls
// of a process whose lease ran out, so a process that hangs (SIGSTOP, a
// partition) ends its streams with an error event instead of holding them.
// README.md has the user-facing rules.
package inference
