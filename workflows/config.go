package workflows

import (
	"encoding/json"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/engine"
)

// The API validates job requests with the same rules the activities train
// by; these re-exports keep the API's imports to this package.

// FieldError is one problem with a job request's configuration; Loc is the
// path inside the request body.
type FieldError = activities.FieldError

// JobConfig is what a job row's Config holds.
type JobConfig = activities.JobConfig

// InputFile names the job's request body in the blob store; the API stores
// it before it creates the job row.
const InputFile = activities.InputFile

// CheckRLConfig validates an RL job's experimental_config.
func CheckRLConfig(experimental json.RawMessage) []FieldError {
	_, errs := activities.ParseRLConfig(experimental)
	return errs
}

// CheckRLJob runs every check that preparing an RL job on base will run on
// its input; the error is written for the user.
func CheckRLJob(base *engine.Base, groups []trainyard.TrajectoryGroup, experimental json.RawMessage) error {
	return activities.CheckRLJob(base, groups, experimental)
}

// CheckSFTConfig validates an SFT job's config and experimental_config.
func CheckSFTConfig(config, experimental json.RawMessage) []FieldError {
	_, errs := activities.ParseSFTConfig(config, experimental)
	return errs
}

// DataPolicy says which training_data_url forms a server accepts.
type DataPolicy = activities.DataPolicy

// CheckDataURL validates an SFT training_data_url without fetching it.
func CheckDataURL(url string, p DataPolicy) error { return activities.CheckDataURL(url, p) }

// ArtifactRef names an uploaded artifact.
type ArtifactRef = activities.ArtifactRef

// ParseArtifactURL parses wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION].
func ParseArtifactURL(url string) (ArtifactRef, error) { return activities.ParseArtifactURL(url) }

// ArtifactFileName is where an uploaded artifact's data is kept among its
// account's files.
func ArtifactFileName(project, name string) string { return activities.ArtifactFileName(project, name) }

// ArtifactURL is the training_data_url of an uploaded artifact.
func ArtifactURL(entity, project, name string) string {
	return activities.ArtifactURL(entity, project, name)
}

// TokenID parses a sampled token named "token_id:<id>", as trainyard's chat
// completions write them and training reads them.
func TokenID(token string) (int, bool) { return activities.TokenID(token) }

// CheckSFTLine checks one line of SFT training data in everything that does
// not depend on the model; the error reads after "line N".
func CheckSFTLine(line []byte) error {
	_, _, err := activities.ParseSFTLine(line, false)
	return err
}
