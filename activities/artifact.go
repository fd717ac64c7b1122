package activities

import (
	"context"
	"fmt"
	"io"

	"github.com/trainyard/trainyard"
)

// Files holds files that accounts uploaded through the API (SFT training
// data), by account and name. storage/s3 implements it.
type Files interface {
	PutFile(ctx context.Context, accountID, name string, r io.Reader, size int64) error
	GetFile(ctx context.Context, accountID, name string) (io.ReadCloser, error)
}

// ArtifactVersion is the only version an uploaded artifact has: uploads are
// immutable, so each name holds exactly one version, like a W&B artifact
// that was logged once.
const ArtifactVersion = "v0"

// ArtifactFileName is where the data of artifact project/name is kept among
// the account's files. The hosted service reads W&B artifacts; trainyard
// maps wandb-artifact:///ENTITY/PROJECT/NAME[:v0|:latest] onto files
// uploaded to it (POST /v1/preview/files), under the account that owns the
// job's model, whose entity must be ENTITY.
func ArtifactFileName(project, name string) string {
	return fmt.Sprintf("artifacts/%s/%s/%s/data.jsonl", project, name, ArtifactVersion)
}

// ArtifactURL is the training_data_url of an uploaded artifact.
func ArtifactURL(entity, project, name string) string {
	return fmt.Sprintf("wandb-artifact:///%s/%s/%s:%s", entity, project, name, ArtifactVersion)
}

// openArtifact opens the uploaded data a wandb-artifact URL names.
func (a *Activities) openArtifact(ctx context.Context, model *trainyard.Model, raw string) (io.ReadCloser, error) {
	ref, err := ParseArtifactURL(raw)
	if err != nil {
		return nil, invalidf("training_data_url: %v", err)
	}
	if a.d.Files == nil {
		return nil, invalidf("training_data_url: this server does not store artifacts; use an s3:// or http(s):// URL")
	}
	notFound := invalidf("training_data_url: artifact %s/%s/%s:%s was not uploaded to this server (POST /v1/preview/files)",
		ref.Entity, ref.Project, ref.Name, versionOrLatest(ref.Version))
	if ref.Entity != model.Entity || (ref.Version != "" && ref.Version != "latest" && ref.Version != ArtifactVersion) {
		return nil, notFound
	}
	rc, err := a.d.Files.GetFile(ctx, model.AccountID, ArtifactFileName(ref.Project, ref.Name))
	if isCode(err, trainyard.ENOTFOUND) {
		return nil, notFound
	}
	if err != nil {
		return nil, classify(err, "open artifact")
	}
	return rc, nil
}

func versionOrLatest(v string) string {
	if v == "" {
		return "latest"
	}
	return v
}
