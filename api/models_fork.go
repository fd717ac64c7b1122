package api

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/serving"
)

// parseFork checks the syntax of from_checkpoint (POST /v1/preview/models,
// trainyard's addition to ModelCreate): wandb-artifact:///ENTITY/PROJECT/NAME
// with :stepN (or :latest, the newest checkpoint when the model is created).
func parseFork(n validate.Node) (from string, ref serving.ModelRef, ok bool) {
	from, ok = n.String(validate.MinLen(1), validate.MaxLen(1024))
	if !ok {
		return "", ref, false
	}
	ref, err := serving.ParseModelRef(from, func(string) bool { return false })
	if err != nil {
		n.Invalid("expected " + serving.ArtifactScheme + "ENTITY/PROJECT/NAME:stepN, a checkpoint of one of your models")
		return "", ref, false
	}
	return from, ref, true
}

// forkModel creates m as a fork of the checkpoint ref names (the caller's
// own models only; another account's checkpoint is not found, whether or not
// it exists): the checkpoint's files (adapter, its config and the optimizer
// state) are copied to m's step 0, then m and its step 0 row are created in
// one transaction. So m starts exactly where its source was: serving m at
// :step0 answers as the source step does, and a job on m continues from the
// source's adapter and optimizer moments as the source's own next job would.
// A fork keeps its source's base model (422 at base_model otherwise).
func (s *Server) forkModel(ctx context.Context, m *trainyard.Model, from string, ref serving.ModelRef, baseNode validate.Node) error {
	notFound := trainyard.Errorf(trainyard.ENOTFOUND, "Checkpoint '%s' not found.", from)
	if ref.Entity != m.Entity {
		return notFound
	}
	src, err := s.deps.Models.FindModelByName(ctx, m.AccountID, ref.Entity, ref.Project, ref.Name)
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		return notFound
	}
	if err != nil {
		return err
	}
	var ckpt *trainyard.Checkpoint
	if ref.Pinned {
		ckpt, err = s.deps.Models.FindCheckpoint(ctx, src.ID, ref.Step)
	} else {
		ckpt, err = s.deps.Models.LatestCheckpoint(ctx, src.ID)
	}
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		return notFound
	}
	if err != nil {
		return err
	}
	if m.BaseModel != src.BaseModel {
		var errs validate.Errors
		errs.At(m.BaseModel, baseNode.Loc()...).Invalid(fmt.Sprintf("a fork keeps the base model of its source, %s", src.BaseModel))
		return errs.Err()
	}
	u, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("new model id: %w", err)
	}
	id := u.String()
	if err := s.deps.Blobs.CopyCheckpointFiles(ctx, src.ID, ckpt.Step, id, 0); err != nil {
		_ = s.deps.Blobs.DeleteModelFiles(context.WithoutCancel(ctx), id)
		if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
			return notFound // deleted since it was read
		}
		return fmt.Errorf("copy checkpoint %d of model %s: %w", ckpt.Step, src.ID, err)
	}
	m.ID = id
	if _, err := s.deps.Models.CreateForkedModel(ctx, m, ckpt); err != nil {
		// Nothing refers to the copy: remove it (a name taken, say).
		_ = s.deps.Blobs.DeleteModelFiles(context.WithoutCancel(ctx), id)
		m.ID = ""
		if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
			return notFound
		}
		return err
	}
	return nil
}
