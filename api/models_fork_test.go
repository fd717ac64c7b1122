package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
)

// forkBody creates name forked from ref.
func forkBody(name, ref string) map[string]any {
	return map[string]any{"entity": nil, "project": "proj", "name": name, "base_model": testBaseModels[1],
		"return_existing": false, "from_checkpoint": ref}
}

// TestForkModel: from_checkpoint copies a checkpoint of the account's own
// model (every file, optimizer state included) to the new model's step 0,
// with the source's metrics; the fork keeps its source's base model; a
// checkpoint of another account, or one that does not exist, is 404 and a
// malformed reference 422; return_existing returns the model of that name.
func TestForkModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	src := e.createModel("source")
	e.addCheckpoint(src, 1, map[string]float64{"train/loss": 2})
	e.addCheckpoint(src, 2, map[string]float64{"val/reward": 0.7})
	opt := []byte("optimizer moments")
	if err := e.blobs.PutCheckpointFile(ctx, src, 2, trainyard.OptimizerStateFile, bytes.NewReader(opt), int64(len(opt))); err != nil {
		t.Fatal(err)
	}
	ref := "wandb-artifact:///team-a/proj/source:step2"

	res := e.call("POST", "/v1/preview/models", forkBody("fork", ref))
	mustStatus(t, res, http.StatusOK)
	fork := res.JSON(t)["id"].(string)
	page := e.call("GET", "/v1/preview/models/"+fork+"/checkpoints", nil).JSON(t)
	data := page["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["step"] != float64(0) ||
		data[0].(map[string]any)["metrics"].(map[string]any)["val/reward"] != 0.7 {
		t.Fatalf("the fork's checkpoints = %v", page)
	}
	for _, name := range []string{trainyard.AdapterWeightsFile, trainyard.AdapterConfigFile, trainyard.OptimizerStateFile} {
		want, got := e.file(src, 2, name), e.file(fork, 0, name)
		if !bytes.Equal(want, got) {
			t.Fatalf("%s of the fork's step 0 = %q, want the source's %q", name, got, want)
		}
	}
	m, err := e.db.FindModel(ctx, e.acct.ID, fork)
	if err != nil || m.ForkedFrom == "" {
		t.Fatalf("fork = %+v, %v", m, err)
	}

	// Without a step, the source's newest checkpoint.
	res = e.call("POST", "/v1/preview/models", forkBody("fork-latest", "wandb-artifact:///team-a/proj/source"))
	mustStatus(t, res, http.StatusOK)
	newest := e.call("GET", "/v1/preview/models/"+src+"/checkpoints?limit=1&order=desc", nil).JSON(t)["last_id"]
	if m, _ := e.db.FindModel(ctx, e.acct.ID, res.JSON(t)["id"].(string)); m == nil || m.ForkedFrom != newest {
		t.Fatalf("fork of the latest = %+v, want forked from %v", m, newest)
	}

	// The name is taken: 409, or the existing model with return_existing.
	mustStatus(t, e.call("POST", "/v1/preview/models", forkBody("fork", ref)), http.StatusConflict)
	again := forkBody("fork", ref)
	again["return_existing"] = true
	if got := e.call("POST", "/v1/preview/models", again).JSON(t)["id"]; got != fork {
		t.Fatalf("return_existing gave %v, want %s", got, fork)
	}

	// Not found: another account's checkpoint (whether it exists or not),
	// another entity, a missing model or step.
	other := e.call("POST", "/v1/preview/models", map[string]any{"project": "proj", "name": "theirs", "base_model": testBaseModels[1]}, as(e.otherKey))
	mustStatus(t, other, http.StatusOK)
	e.addCheckpoint(other.JSON(t)["id"].(string), 1, nil)
	for _, r := range []string{"wandb-artifact:///team-b/proj/theirs:step1", "wandb-artifact:///team-a/proj/theirs:step1",
		"wandb-artifact:///team-a/proj/missing:step1", "wandb-artifact:///team-a/proj/source:step9", "team-a/proj/source:step7"} {
		res := e.call("POST", "/v1/preview/models", forkBody("nope", r))
		mustStatus(t, res, http.StatusNotFound)
		if d := res.JSON(t)["detail"]; d != fmt.Sprintf("Checkpoint '%s' not found.", r) {
			t.Fatalf("404 detail = %v", d)
		}
	}
	// Nothing was created along the way.
	if _, err := e.db.FindModelByName(ctx, e.acct.ID, "team-a", "proj", "nope"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Fatalf("a failed fork left a model: %v", err)
	}

	// Invalid: a malformed reference, a different base model.
	for _, c := range []struct {
		body map[string]any
		loc  string
	}{
		{forkBody("bad", "not a checkpoint"), `["body","from_checkpoint"] value_error`},
		{forkBody("bad", "wandb-artifact:///team-a/proj/source:v2"), `["body","from_checkpoint"] value_error`},
		{map[string]any{"project": "proj", "name": "bad", "base_model": testBaseModels[1], "from_checkpoint": 7}, `["body","from_checkpoint"] string_type`},
		{map[string]any{"project": "proj", "name": "bad", "base_model": testBaseModels[0], "from_checkpoint": ref}, `["body","base_model"] value_error`},
	} {
		res := e.call("POST", "/v1/preview/models", c.body)
		if got := strings.Join(locs(t, res.Errors(t)), "; "); got != c.loc {
			t.Errorf("%v: errors %s, want %s", c.body["from_checkpoint"], got, c.loc)
		}
	}
	// null is no fork.
	body := forkBody("plain", "")
	body["from_checkpoint"] = nil
	mustStatus(t, e.call("POST", "/v1/preview/models", body), http.StatusOK)
}

// file reads a checkpoint file from S3.
func (e *env) file(modelID string, step int, name string) []byte {
	e.t.Helper()
	rc, err := e.blobs.GetCheckpointFile(context.Background(), modelID, step, name)
	if err != nil {
		e.t.Fatalf("checkpoint %d %s of %s: %v", step, name, modelID, err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return b
}
