package activities

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"sync"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
)

// Names of the working documents stored with a job (BlobStore.PutJobInput),
// besides its inputs (jobspec.InputFile, jobspec.DataFile).
const (
	// planFile is the tokenised, batched work that Prepare produces.
	planFile = "plan.gob"
)

// planVersion changes whenever plan's encoding does; a worker refuses a plan
// of another version (and the job fails) rather than misreading it.
const planVersion = 1

// plan is a job's prepared training work. It is stored with the job, so
// every Train activity, on whichever worker, trains exactly the same batches
// with the same settings.
type plan struct {
	Version int
	Kind    trainyard.JobKind
	// Seqs are the SFT conversations; Samples the RL sequences with their
	// advantages. Steps refer to them by index.
	Seqs    []engine.Sequence
	Samples []engine.RLSample
	Steps   []planStep
	RL      engine.RLConfig
	// PrecalculateLogprobs replaces unknown old logprobs by the current
	// policy's before an RL step.
	PrecalculateLogprobs bool
	// LoRA configures the adapter when the model has no checkpoint yet.
	LoRA engine.LoRAConfig
	// Seed initialises a fresh adapter; derived from the model id, so a
	// retried first step starts from the same weights.
	Seed int64
}

// planStep is one gradient step.
type planStep struct {
	Batch        []int
	LearningRate float32
	// Metrics are reported with the step besides the engine's (RL: the
	// reward statistics of the job's trajectories).
	Metrics map[string]float64
}

// planCache keeps the most recently used plans, so consecutive Train
// activities of a job on one worker skip reading and decoding the plan.
type planCache struct {
	mu    sync.Mutex
	order []string
	plans map[string]*plan
}

const planCacheSize = 4

func (c *planCache) get(jobID string) *plan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plans[jobID]
}

func (c *planCache) put(jobID string, p *plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil {
		c.plans = map[string]*plan{}
	}
	if _, ok := c.plans[jobID]; !ok {
		c.order = append(c.order, jobID)
	}
	c.plans[jobID] = p
	for len(c.order) > planCacheSize {
		delete(c.plans, c.order[0])
		c.order = c.order[1:]
	}
}

// savePlan stores p with the job.
func (a *Activities) savePlan(ctx context.Context, jobID string, p *plan) error {
	p.Version = planVersion
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(p); err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	if err := a.d.Blobs.PutJobInput(ctx, jobID, planFile, &buf, int64(buf.Len())); err != nil {
		return fmt.Errorf("store plan of job %s: %w", jobID, err)
	}
	a.plans.put(jobID, p)
	return nil
}

// loadPlan reads the job's plan (from the cache when possible).
func (a *Activities) loadPlan(ctx context.Context, jobID string) (*plan, error) {
	if p := a.plans.get(jobID); p != nil {
		return p, nil
	}
	rc, err := a.d.Blobs.GetJobInput(ctx, jobID, planFile)
	if err != nil {
		return nil, fmt.Errorf("open plan of job %s: %w", jobID, err)
	}
	defer rc.Close()
	p := &plan{}
	if err := gob.NewDecoder(io.Reader(rc)).Decode(p); err != nil {
		return nil, fmt.Errorf("decode plan of job %s: %w", jobID, err)
	}
	if p.Version != planVersion {
		return nil, invalidf("the job was prepared by an incompatible trainyard version (plan version %d, want %d)", p.Version, planVersion)
	}
	a.plans.put(jobID, p)
	return p, nil
}
