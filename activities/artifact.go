package activities

import (
	"context"
	"io"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// Files holds files that accounts uploaded through the API (SFT training
// data), by account and name. storage/s3 implements it.
type Files interface {
	PutFile(ctx context.Context, accountID, name string, r io.Reader, size int64) error
	GetFile(ctx context.Context, accountID, name string) (io.ReadCloser, error)
}

// openArtifact opens the uploaded data a wandb-artifact URL names.
func (a *Activities) openArtifact(ctx context.Context, model *trainyard.Model, raw string) (io.ReadCloser, error) {
	ref, err := jobspec.ParseArtifactURL(raw)
	if err != nil {
		return nil, invalidf("training_data_url: %v", err)
	}
	if a.d.Files == nil {
		return nil, invalidf("training_data_url: this server does not store artifacts; use an s3:// or http(s):// URL")
	}
	notFound := invalidf("training_data_url: artifact %s/%s/%s:%s was not uploaded to this server (POST /v1/preview/files)",
		ref.Entity, ref.Project, ref.Name, versionOrLatest(ref.Version))
	if ref.Entity != model.Entity || (ref.Version != "" && ref.Version != "latest" && ref.Version != jobspec.ArtifactVersion) {
		return nil, notFound
	}
	rc, err := a.d.Files.GetFile(ctx, model.AccountID, jobspec.ArtifactFileName(ref.Project, ref.Name))
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
