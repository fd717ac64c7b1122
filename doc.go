// Package trainyard is the vocabulary of the trainyard training platform: the
// domain types (accounts, models, checkpoints, trajectories, jobs, events),
// the typed error that every layer speaks, and the interfaces of the stores
// that hold them.
//
// It imports the standard library only, so every other package can depend on
// it without dragging infrastructure along. Implementations live in
// storage/postgres and storage/s3; the HTTP layer lives in api; orchestration
// in workflows and activities; the model itself in engine.
package trainyard
