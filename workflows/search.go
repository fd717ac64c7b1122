package workflows

import (
	"context"
	"fmt"
	"sort"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/trainyard/trainyard"
)

// Custom search attributes of job workflows, so an operator finds "the jobs
// of model agent-001" in the Temporal UI with a filter such as
// TrainyardModelName="agent-001" AND ExecutionStatus="Running".
var (
	SearchEntity    = temporal.NewSearchAttributeKeyKeyword("TrainyardEntity")
	SearchProject   = temporal.NewSearchAttributeKeyKeyword("TrainyardProject")
	SearchModelName = temporal.NewSearchAttributeKeyKeyword("TrainyardModelName")
	SearchModelID   = temporal.NewSearchAttributeKeyKeyword("TrainyardModelID")
	SearchBaseModel = temporal.NewSearchAttributeKeyKeyword("TrainyardBaseModel")
	SearchJobKind   = temporal.NewSearchAttributeKeyKeyword("TrainyardJobKind")
	// SearchJobStatus follows the job's status (QUEUED, RUNNING, PAUSED
	// while paused, then its outcome); the workflow upserts it on every
	// change.
	SearchJobStatus = temporal.NewSearchAttributeKeyKeyword("TrainyardJobStatus")
	// SearchSummary holds the workflow's summary ("RL job of
	// local/demo/agent-001 on trainyard/tiny-chat"). The Web UI shows a
	// workflow's summary on its own page only; as a search attribute it can
	// be a column of the workflow list. Text, not keyword: SQL visibility
	// stores keywords in 255 characters, and names can be longer.
	SearchSummary = temporal.NewSearchAttributeKeyString("TrainyardSummary")
)

// SearchAttributeTypes are the custom search attributes a namespace needs
// for trainyard's jobs, by name: `serve` registers them in its embedded
// Temporal, `trainyard migrate` in an external one.
func SearchAttributeTypes() map[string]enumspb.IndexedValueType {
	out := map[string]enumspb.IndexedValueType{}
	for _, k := range []temporal.SearchAttributeKeyKeyword{SearchEntity, SearchProject, SearchModelName, SearchModelID,
		SearchBaseModel, SearchJobKind, SearchJobStatus} {
		out[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	out[SearchSummary.GetName()] = enumspb.INDEXED_VALUE_TYPE_TEXT
	return out
}

// startAttributes are a job workflow's search attributes at its start.
func startAttributes(job *trainyard.Job, model *trainyard.Model) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		SearchEntity.ValueSet(model.Entity), SearchProject.ValueSet(model.Project),
		SearchModelName.ValueSet(model.Name), SearchModelID.ValueSet(model.ID),
		SearchBaseModel.ValueSet(model.BaseModel), SearchJobKind.ValueSet(string(job.Kind)),
		SearchJobStatus.ValueSet(string(trainyard.JobQueued)), SearchSummary.ValueSet(summary(job, model)))
}

// summary is a job workflow's one-line description in the Temporal UI.
func summary(job *trainyard.Job, model *trainyard.Model) string {
	kind := "RL"
	if job.Kind == trainyard.JobKindSFT {
		kind = "SFT"
	}
	return fmt.Sprintf("%s job of %s/%s/%s on %s", kind, model.Entity, model.Project, model.Name, model.BaseModel)
}

// searchVersion marks workflows that keep TrainyardJobStatus current;
// histories from before it replay without the upserts.
const searchVersion = "upsert-job-status"

// setStatus records the job's status in the workflow's search attributes,
// when the workflow was started with them (a cluster without the attributes
// registered starts jobs without them, and an upsert would fail there).
func (j *job) setStatus(ctx workflow.Context, status trainyard.JobStatus) {
	if _, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(SearchJobStatus); !ok {
		return
	}
	if workflow.GetVersion(ctx, searchVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, SearchJobStatus.ValueSet(string(status))); err != nil {
		workflow.GetLogger(ctx).Warn("could not record the job's status in its search attributes", "JobID", j.id, "Error", err)
	}
}

// MissingSearchAttributes lists the search attributes of
// SearchAttributeTypes that the namespace lacks.
func MissingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, temporalError(err, "list the search attributes of namespace %s", namespace)
	}
	var missing []string
	for name := range SearchAttributeTypes() {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// RegisterSearchAttributes adds the search attributes the namespace lacks
// (`trainyard migrate` against an external Temporal).
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := MissingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	add := map[string]enumspb.IndexedValueType{}
	for _, name := range missing {
		add[name] = SearchAttributeTypes()[name]
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: add})
	return temporalError(err, "add search attributes to namespace %s", namespace)
}
