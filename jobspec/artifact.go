package jobspec

import "fmt"

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
