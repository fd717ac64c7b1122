package activities

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
)

// Train runs the job's next gradient steps, for about Config.ChunkDuration
// or until the job is asked to pause, and returns how many steps are done.
// After every step it records the gradient_step event (seq = step + 1 +
// in.EventOffset), and the job's progress at least every
// Config.ProgressInterval and at the end; it stores the
// training state at least every Config.SaveInterval and always before it
// returns, heartbeating how far the stored state reaches, so a retry (on
// this worker or another) resumes from there and recomputes only the steps
// after it. After the last step the state is stored as the new checkpoint's
// objects; the Complete activity then records the checkpoint row.
func (a *Activities) Train(ctx context.Context, in TrainInput) (*TrainResult, error) {
	// Whether it fails or ends its chunk normally, an activity that
	// outlived its job (terminated under it) may just have stored state.
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
	if total != in.TotalSteps || in.Done < 0 || in.Done > total {
		return nil, invalidf("internal error: the plan has %d steps, the workflow expects %d with %d done", total, in.TotalSteps, in.Done)
	}
	// Resume from the newest stored state: this activity's own last
	// attempt (its heartbeat), or any earlier run of the job's workflow
	// (the job row), so a reset from the Temporal UI continues the job
	// instead of training it again from a step it had passed.
	from := in.Done
	if activity.HasHeartbeatDetails(ctx) {
		var hb heartbeat
		if err := activity.GetHeartbeatDetails(ctx, &hb); err == nil && hb.Saved > from && hb.Saved <= total {
			from = hb.Saved
		}
	}
	if job.SavedStep > from && job.SavedStep <= total {
		from = job.SavedStep
	}
	runID := activity.GetInfo(ctx).WorkflowExecution.RunID
	if job.RunID != runID {
		// A new run (a reset, a continue-as-new) now trains the job.
		if err := a.d.Jobs.UpdateJob(ctx, job.ID, trainyard.JobUpdate{RunID: &runID}); err != nil {
			return nil, classify(err, "record the job's run")
		}
	}
	if from == total {
		return &TrainResult{Done: total, Metrics: job.LatestMetrics, WorkerQueue: workerQueue(ctx)}, nil
	}
	release, err := a.computeSlot(ctx, job.ID, heartbeat{Saved: from})
	if err != nil {
		return nil, err
	}
	defer release()
	base, err := a.jobBase(ctx, job)
	if err != nil {
		return nil, err
	}
	// The state the job's previous chunk left in this worker's memory, or
	// else the stored one (the first chunk, or the job moved here).
	loadedBefore := a.loaded.Load()
	st := a.cachedState(ctx, job, in.BaseStep, from)
	if st == nil {
		if st, err = a.loadState(ctx, job, base, p, in.BaseStep, from); err != nil {
			return nil, err
		}
	}
	est, err := a.fitMemory(base, p, st.adapter.Config())
	if err != nil {
		return nil, err
	}
	trainer := engine.NewTrainer(base, st.adapter, st.opt)
	defer trainer.Close() // its working memory goes to the base's next job
	trainer.SetActivationBudget(est.ActivationBudget)
	ka := startKeepAlive(ctx, a.cfg.HeartbeatInterval, from)
	defer ka.close()
	log := a.d.Logger.With(zap.String("job_id", job.ID))
	if from > in.Done {
		log.Info("resuming from stored state", zap.Int("done", from), zap.Int("activity_input_done", in.Done))
	}

	stopping := activity.GetWorkerStopChannel(ctx)
	started, lastSave, lastProgress, lastPauseCheck := time.Now(), time.Now(), time.Time{}, time.Time{}
	var metrics map[string]float64
	var stepTime, saveTime time.Duration // of the chunk's elapsed time: its gradient steps, storing its state
	done, savedAt, paused := from, from, false
	for done < total {
		// A pause takes effect here, between two steps (and before the
		// first); the request is read from the job row now and then.
		if time.Since(lastPauseCheck) >= a.cfg.PauseCheckInterval {
			if paused, err = a.pauseRequested(ctx, job.ID); err != nil {
				return nil, err
			}
			if lastPauseCheck = time.Now(); paused {
				break
			}
		}
		stepStart := time.Now()
		stats, err := a.step(ctx, trainer, p, done)
		if err != nil {
			return nil, classify(err, fmt.Sprintf("gradient step %d", done+1))
		}
		stepTime += time.Since(stepStart)
		telemetry.StepDuration.WithLabelValues(string(job.Kind)).Observe(time.Since(stepStart).Seconds())
		telemetry.TrainTokens.WithLabelValues(string(job.Kind)).Add(stats["num_tokens"])
		if metrics, err = stepMetrics(p.Steps[done], stats, done+1); err != nil {
			return nil, err
		}
		done++
		ka.show(done, total, metrics["loss"])
		// A stopping worker hands the job over after this step: its
		// state is stored below and the next activity runs elsewhere.
		chunkOver := time.Since(started) >= a.cfg.ChunkDuration || closed(stopping)
		progress := done == total || chunkOver || time.Since(lastProgress) >= a.cfg.ProgressInterval
		if err := a.recordStep(ctx, job.ID, runID, done, in.EventOffset, metrics, progress); err != nil {
			return nil, err
		}
		if progress {
			lastProgress = time.Now()
		}
		if done == total || chunkOver || time.Since(lastSave) >= a.cfg.SaveInterval {
			saveStart := time.Now()
			if err := a.persist(ctx, job, st, ka, in.BaseStep, done, total); err != nil {
				return nil, err
			}
			savedAt, lastSave = done, time.Now()
			saveTime += lastSave.Sub(saveStart)
		}
		if chunkOver {
			break
		}
	}
	if paused && savedAt != done {
		// The pause holds the job at this step: its state must be stored.
		if err := a.persist(ctx, job, st, ka, in.BaseStep, done, total); err != nil {
			return nil, err
		}
	}
	if metrics == nil {
		metrics = job.LatestMetrics // paused before a step of its own
	}
	// The next chunk comes back to this worker, which keeps the state
	// (stored above too: the copy only saves reading it back), unless the
	// worker is stopping, or another job waits for its slot (the jobs take
	// turns): then it goes to any holder of the base model.
	own := workerQueue(ctx)
	if done == total && !closed(stopping) {
		a.states.putCheckpoint(job.ModelID, in.BaseStep+1, job.ID, st)
	}
	if done < total && !closed(stopping) {
		a.states.put(job.ID, in.BaseStep, done, st)
		if a.othersWaiting() {
			own = ""
			a.yieldTurn(job.ID)
		}
	}
	if closed(stopping) {
		own = ""
	}
	log.Info("train chunk done", zap.Int("from", from), zap.Int("done", done), zap.Int("total", total),
		zap.Bool("paused", paused), zap.Duration("elapsed", time.Since(started)), zap.Duration("steps", stepTime),
		zap.Duration("saves", saveTime),
		zap.String("task_queue", activity.GetInfo(ctx).TaskQueue), zap.Int64("state_bytes_loaded", a.loaded.Load()-loadedBefore))
	return &TrainResult{Done: done, Metrics: metrics, Paused: paused, WorkerQueue: own}, nil
}

// persist stores the training state after done steps (with the job, or as
// the new checkpoint after the last step), records how far it reaches in
// the job row and heartbeats it, so any retry resumes from there.
func (a *Activities) persist(ctx context.Context, job *trainyard.Job, st *trainState, ka *keepAlive, baseStep, done, total int) error {
	files, err := encodeState(st)
	if err != nil {
		return err
	}
	return a.persistFiles(ctx, job, files, ka, baseStep, done, total)
}

// persistFiles is persist for a state already encoded.
func (a *Activities) persistFiles(ctx context.Context, job *trainyard.Job, files stateFiles, ka *keepAlive, baseStep, done, total int) error {
	if err := a.saveState(ctx, job, files, baseStep, done, total); err != nil {
		return err
	}
	if err := a.d.Jobs.UpdateJob(ctx, job.ID, trainyard.JobUpdate{SavedStep: &done}); err != nil {
		return classify(err, "record the job's stored state")
	}
	ka.progress(ctx, done)
	return nil
}

// dropScratchOfClosed deletes the scratch objects of a job that was closed
// under a Train activity without its workflow's cleanup (a terminate from
// the Temporal UI, closed by whoever looked at it next): the state this
// activity stored before it learnt of that would otherwise stay. Best
// effort, after the activity's own context may have been cancelled.
func (a *Activities) dropScratchOfClosed(ctx context.Context, jobID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	job, err := a.d.Jobs.GetJob(ctx, jobID)
	if err != nil || !job.Status.Terminal() {
		return
	}
	if err := DropScratch(ctx, a.d.Blobs, jobID); err != nil {
		a.d.Logger.Warn("could not delete a closed job's intermediate state", zap.String("job_id", jobID), zap.Error(err))
	}
}

// step runs gradient step i of the plan.
func (a *Activities) step(ctx context.Context, tr *engine.Trainer, p *plan, i int) (engine.StepStats, error) {
	s := p.Steps[i]
	opt := adamW(s.LearningRate)
	if p.Kind == trainyard.JobKindSFT {
		seqs := make([]engine.Sequence, len(s.Batch))
		for j, k := range s.Batch {
			seqs[j] = p.Seqs[k]
		}
		return tr.SFTStep(ctx, seqs, opt)
	}
	// An empty batch (no trajectory carried signal) is a skipped step:
	// the weights stay, and the step counter still advances as clients
	// expect.
	batch := make([]engine.RLSample, len(s.Batch))
	for j, k := range s.Batch {
		batch[j] = p.Samples[k]
	}
	if p.PrecalculateLogprobs {
		if err := precalculate(ctx, tr, batch); err != nil {
			return nil, err
		}
	}
	return tr.RLStep(ctx, batch, p.RL, opt)
}

// precalculate fills unknown old logprobs of trainable tokens with the
// current policy's, so those tokens train on-policy.
func precalculate(ctx context.Context, tr *engine.Trainer, batch []engine.RLSample) error {
	seqs := make([]engine.Sequence, len(batch))
	for i := range batch {
		seqs[i] = batch[i].Sequence
	}
	lps, err := tr.SequenceLogprobs(ctx, seqs)
	if err != nil {
		return err
	}
	for i := range batch {
		old := append([]float32(nil), batch[i].OldLogprobs...)
		for t, lp := range old {
			if batch[i].Trainable[t] && math.IsNaN(float64(lp)) && t < len(lps[i]) {
				old[t] = lps[i][t]
			}
		}
		batch[i].OldLogprobs = old
	}
	return nil
}

// adamW is the optimizer configuration of a step: the engine's defaults
// (betas 0.9/0.999, no weight decay, gradient clipping at 1) at the step's
// learning rate.
func adamW(lr float32) engine.AdamWConfig {
	c := engine.DefaultAdamWConfig()
	c.LearningRate = lr
	return c
}

// stepMetrics merges the engine's statistics with the plan's, refusing
// non-finite values.
func stepMetrics(s planStep, stats engine.StepStats, step int) (map[string]float64, error) {
	if k, v, bad := trainyard.FirstNonFinite(stats); bad {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("gradient step %d: %s is %v; lower the learning rate or check the data", step, k, v), ErrNonFinite, nil)
	}
	m := make(map[string]float64, len(stats)+len(s.Metrics))
	maps.Copy(m, s.Metrics)
	maps.Copy(m, stats)
	return m, nil
}

// recordStep appends the step's gradient_step event (seq done+1 after the
// events pauses added) and, when progress is set, updates the job's progress
// (current step, latest metrics, run id).
func (a *Activities) recordStep(ctx context.Context, jobID, runID string, done, eventOffset int, metrics map[string]float64, progress bool) error {
	data := make(map[string]any, len(metrics))
	for k, v := range metrics {
		data[k] = v
	}
	_, err := a.d.Events.AppendEvent(ctx, &trainyard.Event{JobID: jobID, Seq: done + 1 + eventOffset, Type: trainyard.EventGradientStep, Data: data})
	if isCode(err, trainyard.ECONFLICT) {
		// The job was closed under this activity: its workflow was
		// cancelled or terminated and the heartbeat has not told us yet.
		return gone(err, "job %s was closed while it trained", jobID)
	}
	if err != nil {
		return classify(err, "record gradient_step")
	}
	if !progress {
		return nil
	}
	err = a.d.Jobs.UpdateJob(ctx, jobID, trainyard.JobUpdate{CurrentStep: &done, LatestMetrics: metrics, RunID: &runID})
	return classify(err, "record the job's progress")
}

// closed reports whether ch is closed, without blocking.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
