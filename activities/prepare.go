package activities

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/telemetry"
	"github.com/trainyard/trainyard/jobspec"
)

// Prepare loads the job's input, validates and tokenises it into a plan of
// gradient steps stored with the job, then marks the job RUNNING and
// records training_started. Data that cannot be trained on fails the job
// with a message that says where the problem is.
func (a *Activities) Prepare(ctx context.Context, in PrepareInput) (*PrepareResult, error) {
	job, err := a.activeJob(ctx, in.JobID)
	if err != nil {
		return nil, err
	}
	release, err := a.computeSlot(ctx, in.JobID, heartbeat{})
	if err != nil {
		return nil, err
	}
	defer release()
	// Downloading and tokenising can outlast the heartbeat timeout; the
	// heartbeats also deliver a cancellation of the job while it prepares.
	ka := startKeepAlive(ctx, a.cfg.HeartbeatInterval, 0)
	defer ka.close()
	if job.Kind != in.Kind {
		return nil, invalidf("job %s is a %s job, not %s", job.ID, job.Kind, in.Kind)
	}
	model, err := a.d.Models.FindModel(ctx, job.AccountID, job.ModelID)
	if err != nil {
		return nil, classify(err, "load the job's model")
	}
	base, err := a.base(ctx, model.BaseModel)
	if err != nil {
		return nil, err
	}
	var cfg jobspec.JobConfig
	if len(job.Config) > 0 {
		if err := json.Unmarshal(job.Config, &cfg); err != nil {
			return nil, invalidf("the job's stored configuration is not valid JSON: %v", err)
		}
	}
	var p *plan
	var examples int
	switch job.Kind {
	case trainyard.JobKindRL:
		p, examples, err = a.prepareRL(ctx, job, cfg, base)
	case trainyard.JobKindSFT:
		p, examples, err = a.prepareSFT(ctx, job, model, cfg, base)
	default:
		err = invalidf("unknown job kind %q", job.Kind)
	}
	if err != nil {
		return nil, err
	}
	p.Kind, p.LoRA, p.Seed = job.Kind, engine.DefaultLoRAConfig(), seedOf(model.ID)
	est, err := a.fitMemory(base, p, p.LoRA)
	if err != nil {
		return nil, err
	}
	if err := a.savePlan(ctx, job.ID, p); err != nil {
		return nil, classify(err, "store the prepared plan")
	}
	total := len(p.Steps)
	if err := a.markStarted(ctx, job, total, examples); err != nil {
		return nil, err
	}
	a.d.Logger.Info("job prepared", zap.String("job_id", job.ID), zap.String("kind", string(job.Kind)),
		zap.Int("base_step", in.BaseStep), zap.Int("steps", total), zap.Int("examples", examples),
		zap.Int64("step_memory_bytes", est.Total()), zap.Int("micro_batch", est.MicroBatch))
	return &PrepareResult{TotalSteps: total, NumExamples: examples, WorkerQueue: workerQueue(ctx)}, nil
}

// markStarted records training_started (seq 1) and the RUNNING status.
// num_sequences counts gradient steps: ART sizes its progress bar with it
// and advances it once per gradient_step event.
func (a *Activities) markStarted(ctx context.Context, job *trainyard.Job, total, examples int) error {
	data := map[string]any{"num_sequences": total, "num_gradient_steps": total, "num_examples": examples}
	if _, err := a.d.Events.AppendEvent(ctx, &trainyard.Event{JobID: job.ID, Seq: 1, Type: trainyard.EventTrainingStarted, Data: data}); err != nil {
		return classify(err, "record training_started")
	}
	running := trainyard.JobRunning
	now := time.Now().UTC()
	runID := activity.GetInfo(ctx).WorkflowExecution.RunID
	u := trainyard.JobUpdate{Status: &running, TotalSteps: &total, RunID: &runID}
	if job.StartedAt == nil {
		u.StartedAt = &now
		telemetry.QueueWait.WithLabelValues(string(job.Kind)).Observe(now.Sub(job.CreatedAt).Seconds())
	}
	if err := a.d.Jobs.UpdateJob(ctx, job.ID, u); err != nil {
		return classify(err, "mark job running")
	}
	return nil
}

// activeJob loads a job that may still do work: a job closed meanwhile
// (cancelled through the API while its workflow was being reset, say) must
// not train.
func (a *Activities) activeJob(ctx context.Context, jobID string) (*trainyard.Job, error) {
	job, err := a.d.Jobs.GetJob(ctx, jobID)
	if err != nil {
		return nil, classify(err, "load job")
	}
	if job.Status.Terminal() {
		return nil, gone(nil, "job %s is already %s", job.ID, job.Status)
	}
	return job, nil
}

// jobBase opens the base model of the job's model.
func (a *Activities) jobBase(ctx context.Context, job *trainyard.Job) (*engine.Base, error) {
	model, err := a.d.Models.FindModel(ctx, job.AccountID, job.ModelID)
	if err != nil {
		return nil, classify(err, "load the job's model")
	}
	return a.base(ctx, model.BaseModel)
}

// base opens the model's base model.
func (a *Activities) base(ctx context.Context, name string) (*engine.Base, error) {
	b, err := a.d.Bases.Base(ctx, name)
	if isCode(err, trainyard.ENOTFOUND) {
		return nil, invalidf("base model %q is not available on this worker", name)
	}
	if err != nil {
		return nil, classify(err, "open base model "+name)
	}
	return b, nil
}

// seedOf derives a fresh adapter's seed from the model id.
func seedOf(modelID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(modelID))
	return int64(h.Sum64() & (1<<63 - 1))
}
