package serving

import (
	"context"
	"fmt"

	"github.com/trainyard/trainyard"
)

// target is what a model name resolves to for one request: a base model and, when the trained model has a
// checkpoint at the requested step, that checkpoint's adapter.
type target struct {
	// Base is the base model name.
	Base string
	// Checkpoint is the checkpoint whose adapter is applied; nil means the base model alone (a trained
	// model with no checkpoint yet, or step 0).
	Checkpoint *trainyard.Checkpoint
}

// resolver turns model names into targets, reading the account's rows on every call: the checkpoint table
// is the source of truth, so a new checkpoint is served as soon as its row exists and a deleted one never
// again, whatever the adapter cache holds.
type resolver struct {
	models trainyard.ModelStore
	isBase func(string) bool
}

// resolve parses name and looks it up for accountID. Every failure a client can cause is ENOTFOUND with a
// message naming the model; another account's model is indistinguishable from a missing one.
func (r *resolver) resolve(ctx context.Context, accountID, name string) (*target, error) {
	ref, err := ParseModelRef(name, r.isBase)
	if err != nil {
		return nil, err
	}
	if ref.Base != "" {
		return &target{Base: ref.Base}, nil
	}
	m, err := r.models.FindModelByName(ctx, accountID, ref.Entity, ref.Project, ref.Name)
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		return nil, trainyard.WrapError(trainyard.ENOTFOUND, err, "The model `%s` does not exist.", name)
	}
	if err != nil {
		return nil, fmt.Errorf("find model %s: %w", ref, err)
	}
	t := &target{Base: m.BaseModel}
	switch {
	case ref.Pinned:
		c, err := r.models.FindCheckpoint(ctx, m.ID, ref.Step)
		if trainyard.ErrorCode(err) == trainyard.ENOTFOUND && ref.Step == 0 && m.ForkedFrom == "" {
			// Step 0 of a model trained from its base is the base model itself; only a fork has a
			// checkpoint there (a copy of its source).
			return t, nil
		}
		if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
			return nil, trainyard.WrapError(trainyard.ENOTFOUND, err,
				"The model `%s` does not exist: %s has no checkpoint at step %d.", name, ref, ref.Step)
		}
		if err != nil {
			return nil, fmt.Errorf("find checkpoint %s step %d: %w", ref, ref.Step, err)
		}
		t.Checkpoint = c
	default:
		c, err := r.models.LatestCheckpoint(ctx, m.ID)
		switch {
		case trainyard.ErrorCode(err) == trainyard.ENOTFOUND:
			// Not trained yet: the base model answers, as the hosted service does.
		case err != nil:
			return nil, fmt.Errorf("latest checkpoint of %s: %w", ref, err)
		default:
			t.Checkpoint = c
		}
	}
	return t, nil
}
