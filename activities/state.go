package activities

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"go.temporal.io/sdk/temporal"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// A job's training state (adapter weights, adapter config, optimizer state)
// lives at deterministic keys: before the first step it is the model's
// checkpoint at the job's base step (or a fresh adapter), after the last
// step it is the job's new checkpoint, and in between it is stored with the
// job, keyed by the number of completed steps. A retried Train activity
// therefore resumes from exactly the state it last stored.

// statePrefix starts the names of in-progress state files.
const statePrefix = "state-"

// stateFile names one file of the in-progress state after done steps.
func stateFile(done int, name string) string {
	return fmt.Sprintf("%s%06d-%s", statePrefix, done, name)
}

// trainState is an adapter with its optimizer state.
type trainState struct {
	adapter *engine.Adapter
	opt     *engine.OptimizerState
}

// cachedState takes the state a chunk of job continues from out of this
// worker's memory, or returns nil: the job's own last chunk's state, or, for
// the first chunk of a job, the checkpoint it starts from when a job of this
// worker wrote it, and the model's checkpoint row still names that job (a
// step deleted and written again by another job is read from the store).
func (a *Activities) cachedState(ctx context.Context, job *trainyard.Job, baseStep, done int) *trainState {
	if st := a.states.take(job.ID, baseStep, done); st != nil {
		telemetry.StateCacheHits.Inc()
		return st
	}
	if done != 0 || baseStep == 0 {
		return nil
	}
	st, writer := a.states.takeCheckpoint(job.ModelID, baseStep)
	if st == nil {
		return nil
	}
	ck, err := a.d.Models.FindCheckpoint(ctx, job.ModelID, baseStep)
	if err != nil || ck.JobID == nil || *ck.JobID != writer {
		return nil
	}
	telemetry.StateCacheHits.Inc()
	return st
}

// loadState opens the state after done steps of a job that started from
// checkpoint baseStep. Step 0 is a fresh adapter, unless the model is a fork,
// whose step 0 checkpoint (a copy of its source's adapter and optimizer
// state) it starts from.
//
// The bytes read are counted by source (checkpoint or job_state): job_state
// bytes are the cost of a chunk that did not find the job's state in its
// worker's memory.
func (a *Activities) loadState(ctx context.Context, job *trainyard.Job, base *engine.Base, p *plan, baseStep, done int) (*trainState, error) {
	source := "checkpoint"
	if done > 0 {
		source = "job_state"
	}
	loaded := telemetry.StateBytesLoaded.WithLabelValues(source)
	open := func(name string) (io.ReadCloser, error) {
		var rc io.ReadCloser
		var err error
		if done == 0 {
			rc, err = a.d.Blobs.GetCheckpointFile(ctx, job.ModelID, baseStep, name)
		} else {
			rc, err = a.d.Blobs.GetJobInput(ctx, job.ID, stateFile(done, name))
		}
		if err != nil {
			return nil, err
		}
		return &stateReader{ReadCloser: rc, add: func(n int) { loaded.Add(float64(n)); a.loaded.Add(int64(n)) }}, nil
	}
	where := fmt.Sprintf("checkpoint %d", baseStep)
	if done > 0 {
		where = fmt.Sprintf("the job's state after step %d", done)
	}
	cfg, err := readAll(open(trainyard.AdapterConfigFile))
	if done == 0 && baseStep == 0 && isCode(err, trainyard.ENOTFOUND) {
		ad, err := base.NewAdapter(p.LoRA, p.Seed)
		if err != nil {
			return nil, classify(err, "create a fresh adapter")
		}
		return &trainState{adapter: ad, opt: engine.NewOptimizerState(ad)}, nil
	}
	if err != nil {
		return nil, classify(err, "read the adapter config of "+where)
	}
	weights, err := open(trainyard.AdapterWeightsFile)
	if err != nil {
		return nil, classify(err, "open the adapter of "+where)
	}
	ad, err := base.LoadAdapter(weights, cfg)
	weights.Close()
	if err != nil {
		return nil, classify(err, "load the adapter of "+where)
	}
	st := &trainState{adapter: ad}
	optR, err := open(trainyard.OptimizerStateFile)
	switch {
	case isCode(err, trainyard.ENOTFOUND) && done == 0:
		// A checkpoint without optimizer state (imported, say) starts
		// with fresh moments.
		st.opt = engine.NewOptimizerState(ad)
		return st, nil
	case err != nil:
		return nil, classify(err, "open the optimizer state of "+where)
	}
	defer optR.Close()
	if st.opt, err = engine.ReadOptimizerState(optR, ad); err != nil {
		return nil, classify(err, "load the optimizer state of "+where)
	}
	return st, nil
}

// stateFiles are a training state's stored files, encoded.
type stateFiles []encodedFile

// encodedFile is one file of a training state.
type encodedFile struct {
	name string
	data []byte
}

// putEach stores every file with put, all at once: one after another, the
// state of a 135M model's job (optimizer moments, adapter, config) took
// 0.2–0.6 s of its time. The error is the first file's that failed.
func (fs stateFiles) putEach(put func(encodedFile) error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Go(func() { errs[i] = put(f) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// size is the bytes the files take.
func (fs stateFiles) size() int64 {
	var n int64
	for _, f := range fs {
		n += int64(len(f.data))
	}
	return n
}

// encodeState encodes the state's files: optimizer state, adapter config
// and adapter weights.
func encodeState(st *trainState) (stateFiles, error) {
	// Sized up front (the tensors, plus room for the headers): grown by
	// doubling, the buffers copied and faulted in twice the state's bytes.
	var weights, opt bytes.Buffer
	n := int(st.adapter.SizeBytes())
	weights.Grow(n + n/16 + 64<<10)
	opt.Grow(2*n + n/8 + 64<<10)
	if err := st.adapter.WriteWeights(&weights); err != nil {
		return nil, fmt.Errorf("encode adapter: %w", err)
	}
	if err := st.opt.Write(&opt); err != nil {
		return nil, fmt.Errorf("encode optimizer state: %w", err)
	}
	cfg, err := st.adapter.ConfigJSON()
	if err != nil {
		return nil, fmt.Errorf("encode adapter config: %w", err)
	}
	return stateFiles{{trainyard.OptimizerStateFile, opt.Bytes()}, {trainyard.AdapterConfigFile, cfg}, {trainyard.AdapterWeightsFile, weights.Bytes()}}, nil
}

// saveState stores the encoded state after done steps: with the job, or as
// the new checkpoint's objects after the last step. A checkpoint row that
// already exists means the objects are final: they are left alone.
func (a *Activities) saveState(ctx context.Context, job *trainyard.Job, files stateFiles, baseStep, done, total int) error {
	for _, f := range files {
		telemetry.StateBytes.Add(float64(len(f.data)))
	}
	if done < total {
		err := files.putEach(func(f encodedFile) error {
			return a.d.Blobs.PutJobInput(ctx, job.ID, stateFile(done, f.name), bytes.NewReader(f.data), int64(len(f.data)))
		})
		return classify(err, "store the job's training state")
	}
	// The next job on the model may write this step once this job is
	// closed, so a job closed under this activity must not touch it.
	if _, err := a.activeJob(ctx, job.ID); err != nil {
		return err
	}
	step := baseStep + 1
	existing, err := a.d.Models.FindCheckpoint(ctx, job.ModelID, step)
	switch {
	case err == nil && existing.JobID != nil && *existing.JobID == job.ID:
		return nil
	case err == nil:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("checkpoint step %d of the model already exists (written by another job); the step counter moved under this job", step),
			ErrConflict, nil)
	case !isCode(err, trainyard.ENOTFOUND):
		return classify(err, "look up the new checkpoint")
	}
	err = files.putEach(func(f encodedFile) error {
		return a.d.Blobs.PutCheckpointFile(ctx, job.ModelID, step, f.name, bytes.NewReader(f.data), int64(len(f.data)))
	})
	return classify(err, fmt.Sprintf("store checkpoint %d", step))
}

// stateReader reports the bytes of state read through it.
type stateReader struct {
	io.ReadCloser
	add func(int)
}

func (r *stateReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.add(n)
	}
	return n, err
}

func readAll(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
