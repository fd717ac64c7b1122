package trainyard

import (
	"context"
	"io"
)

// Names of the files of a checkpoint, in the PEFT layout, plus the optimizer
// state that lets a later job resume exactly.
const (
	AdapterWeightsFile = "adapter_model.safetensors"
	AdapterConfigFile  = "adapter_config.json"
	OptimizerStateFile = "optimizer.bin"
)

// BlobStore holds large objects: checkpoint files, job inputs and uploaded
// training data. Object keys are the implementation's business; callers name
// things by model, step and job. Writes are idempotent (same key, same
// content), so retried activities are safe.
type BlobStore interface {
	// PutCheckpointFile stores one file of the checkpoint of modelID at step.
	PutCheckpointFile(ctx context.Context, modelID string, step int, name string, r io.Reader, size int64) error
	// GetCheckpointFile opens one file of a checkpoint; ENOTFOUND if absent.
	GetCheckpointFile(ctx context.Context, modelID string, step int, name string) (io.ReadCloser, error)
	// DeleteCheckpointFiles removes every file of a checkpoint.
	DeleteCheckpointFiles(ctx context.Context, modelID string, step int) error
	// DeleteModelFiles removes every object of a model.
	DeleteModelFiles(ctx context.Context, modelID string) error
	// CopyCheckpointFiles copies every file of a checkpoint to another
	// model's step (a fork's step 0); ENOTFOUND when it has none.
	CopyCheckpointFiles(ctx context.Context, fromModel string, fromStep int, toModel string, toStep int) error
	// CheckpointSteps lists the steps of a model that have objects,
	// ascending, with or without a checkpoint row.
	CheckpointSteps(ctx context.Context, modelID string) ([]int, error)

	// PutJobInput stores a job's input document (trajectory groups, or SFT
	// data copied in) under the job.
	PutJobInput(ctx context.Context, jobID, name string, r io.Reader, size int64) error
	// GetJobInput opens a job's input document; ENOTFOUND if absent.
	GetJobInput(ctx context.Context, jobID, name string) (io.ReadCloser, error)
	// DeleteJobFiles removes every object stored under a job (its inputs
	// and any state kept with it), e.g. when the job's model is deleted.
	DeleteJobFiles(ctx context.Context, jobID string) error
	// DeleteJobFilesWithPrefix removes a job's objects whose names start
	// with prefix: its scratch state once it has ended.
	DeleteJobFilesWithPrefix(ctx context.Context, jobID, prefix string) error

	// GetURL opens an s3://bucket/key object (SFT training_data_url).
	GetURL(ctx context.Context, url string) (io.ReadCloser, error)

	// Ping checks that the store answers (system-check).
	Ping(ctx context.Context) error
}
