package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/workflows"
)

// The checks of a job request against its model, run before the job is
// accepted, so that what the API accepts is what the worker trains.

// checkArtifact makes sure an SFT job's wandb-artifact training_data_url
// names data its model's account uploaded, so the job cannot be accepted
// only to fail in preparation. Other URL forms pass.
func (s *Server) checkArtifact(ctx context.Context, url string, model *trainyard.Model) error {
	ref, err := jobspec.ParseArtifactURL(url)
	if err != nil {
		return nil
	}
	var errs validate.Errors
	n := errs.At(url, "body", "training_data_url")
	switch {
	case ref.Entity != model.Entity:
		n.Invalid("the artifact's entity must be the model's entity '" + model.Entity + "'")
	case s.deps.Files == nil:
		n.Invalid("this server does not store artifacts; use an s3:// or http(s):// URL")
	default:
		ok, err := s.deps.Files.HasFile(ctx, model.AccountID, jobspec.ArtifactFileName(ref.Project, ref.Name))
		if err != nil {
			return err
		}
		if !ok {
			n.Invalid(fmt.Sprintf("artifact %s/%s/%s was not uploaded to this server (POST /v1/preview/files)",
				ref.Entity, ref.Project, ref.Name))
		}
	}
	return errs.Err()
}

// checkRLJob checks an RL job's trajectories against the model's base as
// preparing the job will: token ids within the vocabulary (reported at the
// token), then rendering and context length. Without Deps.Bases, or for a
// base this process cannot open, only the shape was checked.
func (s *Server) checkRLJob(ctx context.Context, groups trajectoryGroups, experimental json.RawMessage, model *trainyard.Model) error {
	if s.deps.Bases == nil {
		return nil
	}
	base, err := s.deps.Bases.Base(ctx, model.BaseModel)
	if err != nil {
		s.log.Warn("cannot check a job's trajectories against its base model", zap.String("base_model", model.BaseModel), zap.Error(err))
		return nil
	}
	var errs validate.Errors
	vocab := base.VocabSize()
	for gi, g := range groups.Groups {
		for ti, t := range g.Trajectories {
			at := []any{"body", "trajectory_groups", gi, "trajectories", ti}
			checkTokenIDs(&errs, t.MessagesAndChoices, vocab, model.BaseModel, append(at, "messages_and_choices")...)
			for hi, h := range t.AdditionalHistories {
				checkTokenIDs(&errs, h.MessagesAndChoices, vocab, model.BaseModel, append(at, "additional_histories", hi, "messages_and_choices")...)
			}
		}
	}
	if errs.Len() == 0 {
		if err := workflows.CheckRLJob(base, groups.Groups, experimental); err != nil {
			reportRLJobError(&errs, err, groups)
		}
	}
	return errs.Err()
}

// reportRLJobError records CheckRLJob's error at the trajectory (history, field) it is about, with the
// value sent there, or at trajectory_groups with the groups sent.
func reportRLJobError(errs *validate.Errors, err error, groups trajectoryGroups) {
	var te *workflows.TrajectoryError
	if !errors.As(err, &te) || te.Group >= len(groups.Groups) || te.Trajectory >= len(groups.Groups[te.Group].Trajectories) {
		errs.At(groups.Groups, "body", "trajectory_groups").Invalid(err.Error())
		return
	}
	t := groups.Groups[te.Group].Trajectories[te.Trajectory]
	loc := []any{"body", "trajectory_groups", te.Group, "trajectories", te.Trajectory}
	var input any = t
	if te.Group < len(groups.Raw) && te.Trajectory < len(groups.Raw[te.Group]) {
		input = groups.Raw[te.Group][te.Trajectory]
	}
	switch {
	case te.Field == "reward":
		loc, input = append(loc, "reward"), t.Reward
	case te.History >= 0 && te.History < len(t.AdditionalHistories):
		loc, input = append(loc, "additional_histories", te.History), t.AdditionalHistories[te.History]
	}
	errs.At(input, loc...).Invalid(te.Err.Error())
}

// checkTokenIDs reports the sampled tokens ("token_id:<id>" logprobs) of
// items' Choices that lie outside a vocabulary of vocab ids.
func checkTokenIDs(errs *validate.Errors, items []trainyard.MessageOrChoice, vocab int, baseModel string, loc ...any) {
	for mi, it := range items {
		if it.Choice == nil || it.Choice.Logprobs == nil {
			continue
		}
		for li, lp := range it.Choice.Logprobs.Content {
			if id, ok := jobspec.TokenID(lp.Token); ok && id >= vocab {
				at := append(append([]any{}, loc...), mi, "logprobs", "content", li, "token")
				errs.At(lp.Token, at...).Invalid(fmt.Sprintf("token id %d is outside the vocabulary of %s (%d tokens)", id, baseModel, vocab))
			}
		}
	}
}
