// Package examples holds programs that use trainyard only through its
// public HTTP API, the way a user's own client would: rl-toy (reinforcement
// learning with a programmatic reward: a three-words task, or arithmetic) and
// sft (supervised fine-tuning on a shipped JSONL file). Each is a `package
// main` on the standard library and examples/trainingapi, the small net/http
// client of the public routes they share; run them with
// `go run ./examples/rl-toy` and `go run ./examples/sft` against `make run`.
//
// The package's test builds the trainyard binary and both examples, starts
// `trainyard serve` as `make run` does (on free ports, a temporary data
// dir and the test database), runs shortened versions of the examples
// through a recording proxy, checks that the reward rises and the loss
// falls, checks every recorded response against the OpenAPI document, and
// stops the service with an interrupt, as Ctrl+C does.
package examples
