package activities

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// Data-parallel steps. When several workers hold a job's base model, the
// workflow runs each step as one Gradient activity per shard of the step's
// batch, on those workers' own queues, then one ApplyStep on the worker
// that keeps the job's state. A shard's gradient is stored with the job,
// named by the step and the shard, so a retried shard overwrites its file
// instead of adding to the step; ApplyStep sums the files in shard order
// (the same order on every run, so K-worker runs are reproducible), takes
// the one optimizer update, records the step's event and stores the state
// the next step's shards start from. Gradient files start with the state
// prefix, so the job's cleanup deletes any left over.

// gradientFile names the gradient of one shard of the step after done.
func gradientFile(done, shard int) string {
	return stateFile(done, fmt.Sprintf("grad-%03d.safetensors", shard))
}

// HoldersInput asks which workers may take shards of a job's steps.
type HoldersInput struct {
	BaseModel string
	// Max caps the workers returned.
	Max int
}

// HoldersResult lists the ids of the live workers holding the base model,
// oldest first (worker ids are UUIDv7), at most Max of them.
type HoldersResult struct {
	WorkerIDs []string
}

// Holders lists the live workers of this task queue that hold the base
// model. Without a worker registry it lists none: steps then run whole.
func (a *Activities) Holders(ctx context.Context, in HoldersInput) (*HoldersResult, error) {
	if a.d.Workers == nil || in.Max < 2 {
		return &HoldersResult{}, nil
	}
	ws, err := a.d.Workers.ListWorkers(ctx, activity.GetInfo(ctx).TaskQueue)
	if err != nil {
		return nil, classify(err, "look up the workers")
	}
	var ids []string
	for _, w := range ws {
		if w.Live && w.Holds(in.BaseModel) {
			ids = append(ids, w.ID)
		}
	}
	slices.Sort(ids)
	if len(ids) > in.Max {
		ids = ids[:in.Max]
	}
	return &HoldersResult{WorkerIDs: ids}, nil
}

// ShardInput asks for one shard's gradient of the step after Done.
type ShardInput struct {
	JobID      string
	BaseStep   int
	Done       int
	TotalSteps int
	// Shard is this shard's index among Shards.
	Shard, Shards int
	// Previous describes the step before, when it was spread too: a
	// worker that kept the state from before it catches up by applying
	// its gradients, instead of reading the state stored after it.
	Previous *PreviousStep `json:",omitempty"`
}

// PreviousStep is the step after Done as it was applied: its shards'
// results in order, and the checksum of the adapter it produced.
type PreviousStep struct {
	Done     int
	Shards   []ShardResult
	Checksum uint32
	// StateBytes is the size of the state stored after it.
	StateBytes int64
}

// ShardResult is a shard's contribution: the sums of its statistics (its
// gradient is in the job's gradient file) and the step's N.
type ShardResult struct {
	Sums engine.GradientSums
	// N is the trainable tokens of the whole step, which every shard
	// computes from the plan; ApplyStep checks they agree.
	N int
	// Bytes is the size of the gradient file written; StateBytes what was
	// read to have the state to compute it from: the stored state, or the
	// previous step's gradients (0 on the worker that applied that step).
	Bytes, StateBytes int64
}

// Gradient computes one shard of the job's next step from the state after
// in.Done steps (the one this worker keeps in memory, else the stored one)
// and stores its gradient. The shards are contiguous runs of the step's
// batch with about equal tokens (engine.Shards); a shard past the end of a
// small batch contributes nothing.
func (a *Activities) Gradient(ctx context.Context, in ShardInput) (*ShardResult, error) {
	start := time.Now()
	job, err := a.activeJob(ctx, in.JobID)
	if err != nil {
		return nil, err
	}
	p, err := a.loadPlan(ctx, job.ID)
	if err != nil {
		return nil, classify(err, "load the job's plan")
	}
	if len(p.Steps) != in.TotalSteps || in.Done < 0 || in.Done >= in.TotalSteps || in.Shard < 0 || in.Shard >= in.Shards {
		return nil, invalidf("internal error: shard %d of %d of the step after %d; the plan has %d steps, the workflow expects %d",
			in.Shard, in.Shards, in.Done, len(p.Steps), in.TotalSteps)
	}
	release, err := a.computeSlot(ctx, job.ID, heartbeat{Saved: in.Done})
	if err != nil {
		return nil, err
	}
	defer release()
	ka := startKeepAlive(ctx, a.cfg.HeartbeatInterval, in.Done)
	defer ka.close()
	base, err := a.jobBase(ctx, job)
	if err != nil {
		return nil, err
	}
	loadedBefore := a.loaded.Load()
	st, caughtUp, err := a.shardState(ctx, job, base, p, in)
	if err != nil {
		return nil, err
	}
	// Every shard worker keeps its replica of the state for the next step
	// (on the worker that applies the step, ApplyStep takes it from here).
	defer a.states.put(job.ID, in.BaseStep, in.Done, st)
	est, err := a.fitMemory(base, p, st.adapter.Config())
	if err != nil {
		return nil, err
	}
	tLoaded := time.Now()
	tr := engine.NewTrainer(base, st.adapter, st.opt)
	defer tr.Close()
	tr.SetActivationBudget(est.ActivationBudget)
	g, n, err := a.shardGradient(ctx, tr, p, in)
	tComputed := time.Now()
	if err != nil {
		return nil, classify(err, fmt.Sprintf("shard %d of gradient step %d", in.Shard+1, in.Done+1))
	}
	var file bytes.Buffer
	if err := g.Write(&file); err != nil {
		return nil, fmt.Errorf("encode the shard's gradient: %w", err)
	}
	size := int64(file.Len())
	if err := a.d.Blobs.PutJobInput(ctx, job.ID, gradientFile(in.Done, in.Shard), &file, size); err != nil {
		return nil, classify(err, "store the shard's gradient")
	}
	telemetry.ShardBytes.WithLabelValues("gradient_written").Add(float64(size))
	telemetry.ShardDuration.WithLabelValues(string(job.Kind)).Observe(time.Since(start).Seconds())
	telemetry.TrainTokens.WithLabelValues(string(job.Kind)).Add(float64(g.Sums.Tokens))
	a.d.Logger.Info("gradient shard done", zap.String("job_id", job.ID), zap.Int("step", in.Done+1),
		zap.Int("shard", in.Shard), zap.Int("shards", in.Shards), zap.Int("tokens", g.Sums.Tokens),
		zap.Duration("elapsed", time.Since(start)), zap.Duration("load", tLoaded.Sub(start)), zap.Duration("compute", tComputed.Sub(tLoaded)),
		zap.Float64("engine_seconds", g.Sums.Seconds), zap.Int64("gradient_bytes", size))
	return &ShardResult{Sums: g.Sums, N: n, Bytes: size, StateBytes: a.loaded.Load() - loadedBefore + caughtUp}, nil
}

// shardState returns the state after in.Done steps for a shard: the one
// this worker keeps, or its replica of the state before, brought forward by
// applying the previous step's gradients exactly as the worker that applied
// it did (the same files, order and code; the adapter's checksum tells),
// or else the stored state. Catching up reads every shard's gradient, so it
// is done only while they add up to less than the stored state (adapter and
// optimizer moments, about three gradients): up to 3 workers. caughtUp is
// the gradient bytes read to catch up.
func (a *Activities) shardState(ctx context.Context, job *trainyard.Job, base *engine.Base, p *plan, in ShardInput) (st *trainState, caughtUp int64, err error) {
	st, at := a.states.takeLatest(job.ID, in.BaseStep)
	switch {
	case st != nil && at == in.Done:
		telemetry.StateCacheHits.Inc()
		return st, 0, nil
	case st != nil && at == in.Done-1 && in.Previous != nil && in.Previous.Done == at && catchUpCheaper(in.Previous):
		tr := engine.NewTrainer(base, st.adapter, st.opt)
		defer tr.Close()
		gs, read, err := a.readGradients(ctx, tr, job.ID, at, in.Previous.Shards)
		caughtUp += read
		if err != nil {
			return a.shardStateStored(ctx, job, base, p, in, caughtUp, err)
		}
		_, err = tr.ApplyGradients(p.Kind == trainyard.JobKindRL, gs, in.Previous.Shards[0].N, adamW(p.Steps[at].LearningRate))
		if err == nil && st.adapter.Checksum() != in.Previous.Checksum {
			err = fmt.Errorf("adapter checksum %08x after catching up, the applied step's is %08x", st.adapter.Checksum(), in.Previous.Checksum)
		}
		if err != nil {
			return a.shardStateStored(ctx, job, base, p, in, caughtUp, err)
		}
		telemetry.StateCacheHits.Inc()
		return st, caughtUp, nil
	}
	st, err = a.loadState(ctx, job, base, p, in.BaseStep, in.Done)
	return st, 0, err
}

// catchUpCheaper reports whether reading the previous step's gradients
// costs less than reading the state stored after it.
func catchUpCheaper(prev *PreviousStep) bool {
	var grads int64
	for _, s := range prev.Shards {
		grads += s.Bytes
	}
	return grads <= prev.StateBytes
}

// shardStateStored reads the stored state after a failed catch-up.
func (a *Activities) shardStateStored(ctx context.Context, job *trainyard.Job, base *engine.Base, p *plan, in ShardInput, caughtUp int64, cause error) (*trainState, int64, error) {
	a.d.Logger.Warn("could not catch up with the previous step; reading the stored state", zap.String("job_id", job.ID),
		zap.Int("done", in.Done), zap.Error(cause))
	st, err := a.loadState(ctx, job, base, p, in.BaseStep, in.Done)
	return st, caughtUp, err
}

// shardGradient computes shard in.Shard of step in.Done of the plan.
func (a *Activities) shardGradient(ctx context.Context, tr *engine.Trainer, p *plan, in ShardInput) (*engine.Gradient, int, error) {
	s := p.Steps[in.Done]
	if p.Kind == trainyard.JobKindSFT {
		seqs := make([]engine.Sequence, len(s.Batch))
		weights := make([]int, len(s.Batch))
		for j, k := range s.Batch {
			seqs[j], weights[j] = p.Seqs[k], len(p.Seqs[k].Tokens)
		}
		n, err := tr.SFTTokens(seqs)
		if err != nil {
			return nil, 0, err
		}
		var part []engine.Sequence
		if shards := engine.Shards(weights, in.Shards); in.Shard < len(shards) {
			for _, j := range shards[in.Shard] {
				part = append(part, seqs[j])
			}
		}
		g, err := tr.SFTGradient(ctx, part, n, in.Shard)
		return g, n, err
	}
	batch := make([]engine.RLSample, len(s.Batch))
	weights := make([]int, len(s.Batch))
	for j, k := range s.Batch {
		batch[j] = p.Samples[k]
		if batch[j].Advantage != 0 || p.RL.KLPenaltyCoef > 0 {
			weights[j] = len(batch[j].Tokens) // samples without signal cost nothing
		}
	}
	n, err := tr.RLTokens(batch, p.RL)
	if err != nil {
		return nil, 0, err
	}
	var part []engine.RLSample
	if shards := engine.Shards(weights, in.Shards); in.Shard < len(shards) {
		for _, j := range shards[in.Shard] {
			part = append(part, batch[j])
		}
	}
	if p.PrecalculateLogprobs && len(part) > 0 {
		if err := precalculate(ctx, tr, part); err != nil {
			return nil, 0, err
		}
	}
	g, err := tr.RLGradient(ctx, part, p.RL, n, in.Shard)
	return g, n, err
}

// ApplyInput asks to apply the step after Done from its shards' gradients.
type ApplyInput struct {
	JobID       string
	BaseStep    int
	Done        int
	TotalSteps  int
	EventOffset int `json:",omitempty"`
	// Shards are the shards' results, in shard order.
	Shards []ShardResult
}

// ApplyStep sums the step's shard gradients in shard order, takes the
// optimizer update on the state after in.Done steps, records the step's
// gradient_step event and progress, and stores the new state (the new
// checkpoint's objects after the last step), which the next step's shards
// start from. It runs once per step: an attempt that finds the step already
// stored (by an earlier attempt that failed to report) reports it.
func (a *Activities) ApplyStep(ctx context.Context, in ApplyInput) (*TrainResult, error) {
	defer a.dropScratchOfClosed(ctx, in.JobID)
	job, err := a.activeJob(ctx, in.JobID)
	if err != nil {
		return nil, err
	}
	p, err := a.loadPlan(ctx, job.ID)
	if err != nil {
		return nil, classify(err, "load the job's plan")
	}
	total := len(p.Steps)
	if total != in.TotalSteps || in.Done < 0 || in.Done >= total || len(in.Shards) == 0 {
		return nil, invalidf("internal error: apply the step after %d from %d shards; the plan has %d steps, the workflow expects %d",
			in.Done, len(in.Shards), total, in.TotalSteps)
	}
	if job.SavedStep > in.Done {
		// An earlier attempt applied the step and stored its state (shards
		// of the next step then read it: there is no checksum to catch up to).
		return &TrainResult{Done: in.Done + 1, Metrics: job.LatestMetrics, WorkerQueue: workerQueue(ctx)}, nil
	}
	n := in.Shards[0].N
	for i, s := range in.Shards {
		if s.N != n {
			return nil, invalidf("internal error: shard %d counts %d trainable tokens in the step, shard 0 %d", i, s.N, n)
		}
	}
	release, err := a.computeSlot(ctx, job.ID, heartbeat{Saved: in.Done})
	if err != nil {
		return nil, err
	}
	defer release()
	ka := startKeepAlive(ctx, a.cfg.HeartbeatInterval, in.Done)
	defer ka.close()
	base, err := a.jobBase(ctx, job)
	if err != nil {
		return nil, err
	}
	st := a.states.take(job.ID, in.BaseStep, in.Done)
	if st != nil {
		telemetry.StateCacheHits.Inc()
	} else if st, err = a.loadState(ctx, job, base, p, in.BaseStep, in.Done); err != nil {
		return nil, err
	}
	tr := engine.NewTrainer(base, st.adapter, st.opt)
	defer tr.Close()
	gs, exchanged, err := a.readGradients(ctx, tr, job.ID, in.Done, in.Shards)
	if err != nil {
		return nil, err
	}
	// Besides the gradients read back: those written, the state read by
	// the shards, and the state stored for the next step's.
	for _, s := range in.Shards {
		exchanged += s.Bytes + s.StateBytes
	}
	stats, err := tr.ApplyGradients(p.Kind == trainyard.JobKindRL, gs, n, adamW(p.Steps[in.Done].LearningRate))
	if err != nil {
		return nil, classify(err, fmt.Sprintf("gradient step %d", in.Done+1))
	}
	// The state stored below is what the next step's other shards read.
	files, err := encodeState(st)
	if err != nil {
		return nil, err
	}
	exchanged += files.size()
	stats["num_workers"], stats["exchanged_bytes"] = float64(len(in.Shards)), float64(exchanged)
	metrics, err := stepMetrics(p.Steps[in.Done], stats, in.Done+1)
	if err != nil {
		return nil, err
	}
	done := in.Done + 1
	runID := activity.GetInfo(ctx).WorkflowExecution.RunID
	if err := a.recordStep(ctx, job.ID, runID, done, in.EventOffset, metrics, true); err != nil {
		return nil, err
	}
	if err := a.persistFiles(ctx, job, files, ka, in.BaseStep, done, total); err != nil {
		return nil, err
	}
	telemetry.StepDuration.WithLabelValues(string(job.Kind)).Observe(stats["num_tokens"] / stats["tokens_per_second"])
	if done < total {
		a.states.put(job.ID, in.BaseStep, done, st)
	}
	// The previous step's gradients are no longer needed: every shard of
	// this step has caught up (or read the state). This step's stay for the
	// next step's shards, unless it was the last. Best effort: the job's
	// cleanup deletes whatever stays.
	if in.Done > 0 {
		a.dropGradients(ctx, job.ID, in.Done-1)
	}
	if done == total {
		a.dropGradients(ctx, job.ID, in.Done)
	}
	a.d.Logger.Info("data-parallel step done", zap.String("job_id", job.ID), zap.Int("done", done), zap.Int("total", total),
		zap.Int("shards", len(in.Shards)), zap.Float64("loss", metrics["loss"]), zap.Int64("exchanged_bytes", exchanged))
	return &TrainResult{Done: done, Metrics: metrics, WorkerQueue: workerQueue(ctx), Checksum: st.adapter.Checksum(), StateBytes: files.size()}, nil
}

// dropGradients deletes the gradient files of the step after done.
func (a *Activities) dropGradients(ctx context.Context, jobID string, done int) {
	if err := a.d.Blobs.DeleteJobFilesWithPrefix(ctx, jobID, stateFile(done, "grad-")); err != nil {
		a.d.Logger.Warn("could not delete a step's shard gradients", zap.String("job_id", jobID), zap.Int("step", done+1), zap.Error(err))
	}
}

// readGradients reads the gradients of the step after done, in shard
// order, and says how many bytes it read.
func (a *Activities) readGradients(ctx context.Context, tr *engine.Trainer, jobID string, done int, shards []ShardResult) ([]*engine.Gradient, int64, error) {
	gs := make([]*engine.Gradient, len(shards))
	var read int64
	for i, s := range shards {
		g, n, err := a.readGradient(ctx, tr, jobID, done, i, s.Sums)
		read += n
		if err != nil {
			return nil, read, err
		}
		gs[i] = g
	}
	return gs, read, nil
}

// readGradient reads shard i's gradient of the step after done and says how
// many bytes it read.
func (a *Activities) readGradient(ctx context.Context, tr *engine.Trainer, jobID string, done, i int, sums engine.GradientSums) (*engine.Gradient, int64, error) {
	rc, err := a.d.Blobs.GetJobInput(ctx, jobID, gradientFile(done, i))
	if isCode(err, trainyard.ENOTFOUND) {
		// The shard's file is gone (deleted by an attempt that applied the
		// step after all?): the shard must run again.
		return nil, 0, temporal.NewApplicationError(fmt.Sprintf("shard %d's gradient of step %d is missing", i, done+1), ErrShardMissing)
	}
	if err != nil {
		return nil, 0, classify(err, fmt.Sprintf("open shard %d's gradient", i))
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	g, err := tr.ReadGradient(cr, sums)
	telemetry.ShardBytes.WithLabelValues("gradient_read").Add(float64(cr.n))
	if err != nil {
		return nil, cr.n, classify(err, fmt.Sprintf("read shard %d's gradient", i))
	}
	return g, cr.n, nil
}

// ErrShardMissing types ApplyStep's error when a shard's gradient file is
// missing: the workflow computes the step's shards again.
const ErrShardMissing = "ShardGradientMissing"
