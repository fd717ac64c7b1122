package api_test

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api"
)

// artCreate is the body the ART client sends: all five keys, entity null.
func artCreate(name string) map[string]any {
	return map[string]any{"entity": nil, "project": "proj", "name": name, "base_model": testBaseModels[0], "return_existing": true}
}

func TestCreateModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.call("POST", "/v1/preview/models", artCreate("m1"))
	mustStatus(t, res, http.StatusOK)
	got := res.JSON(t)
	id := got["id"].(string)
	want := map[string]any{"id": id, "entity": "team-a", "project": "proj", "name": "m1", "base_model": testBaseModels[0], "run_id": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("response = %v, want %v", got, want)
	}
	m, err := e.db.FindModel(context.Background(), e.acct.ID, id)
	if err != nil || m.Name != "m1" || m.Entity != "team-a" {
		t.Errorf("stored model = %+v, %v", m, err)
	}

	// The caller's own entity, spelled out, and an absent one also work.
	res = e.call("POST", "/v1/preview/models", map[string]any{"entity": "team-a", "project": "proj", "name": "m2", "base_model": testBaseModels[0]})
	mustStatus(t, res, http.StatusOK)
	res = e.call("POST", "/v1/preview/models", map[string]any{"project": "proj", "name": "m3", "base_model": testBaseModels[0]})
	mustStatus(t, res, http.StatusOK)
}

func TestCreateModelReturnExistingAndConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.call("POST", "/v1/preview/models", artCreate("dup")).JSON(t)["id"]
	again := e.call("POST", "/v1/preview/models", artCreate("dup"))
	mustStatus(t, again, http.StatusOK)
	if again.JSON(t)["id"] != first {
		t.Errorf("return_existing gave id %v, want %v", again.JSON(t)["id"], first)
	}
	body := artCreate("dup")
	body["return_existing"] = false
	res := e.call("POST", "/v1/preview/models", body)
	mustStatus(t, res, http.StatusConflict)
	if d := res.JSON(t)["detail"].(string); !strings.Contains(d, "team-a/proj/dup") {
		t.Errorf("409 detail = %q", d)
	}
	// Another account may use the same project and name.
	res = e.call("POST", "/v1/preview/models", body, as(e.otherKey))
	mustStatus(t, res, http.StatusOK)
	if res.JSON(t)["id"] == first || res.JSON(t)["entity"] != "team-b" {
		t.Errorf("team-b's model = %s", res.Body)
	}
}

func TestCreateModelForeignEntityIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// An existing entity of another account and one that does not exist
	// answer alike, so entities cannot be probed.
	for _, entity := range []string{"team-b", "nobody"} {
		body := artCreate("m")
		body["entity"] = entity
		res := e.call("POST", "/v1/preview/models", body)
		mustStatus(t, res, http.StatusNotFound)
		if d := res.JSON(t)["detail"]; d != "Entity '"+entity+"' not found." {
			t.Errorf("detail = %q", d)
		}
	}
	if _, err := e.db.FindModelByName(context.Background(), e.other.ID, "team-b", "proj", "m"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Errorf("a model was created for team-b: %v", err)
	}
}

func TestCreateModelValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name string
		body any
		want []string // loc + type of each error, in order
	}{
		{"empty object", `{}`, []string{`["body","project"] missing`, `["body","name"] missing`, `["body","base_model"] missing`}},
		{"no body", ``, []string{`["body"] missing`}},
		{"null body", `null`, []string{`["body"] missing`}},
		{"a list", `[]`, []string{`["body"] model_attributes_type`}},
		{"wrong types", `{"entity":5,"project":1,"name":null,"base_model":true,"return_existing":"maybe"}`,
			[]string{`["body","entity"] string_type`, `["body","project"] string_type`, `["body","name"] string_type`,
				`["body","base_model"] string_type`, `["body","return_existing"] bool_parsing`}},
		{"bad names", `{"project":"a/b","name":"x y","base_model":"trainyard/tiny-chat"}`,
			[]string{`["body","project"] string_pattern_mismatch`, `["body","name"] string_pattern_mismatch`}},
		{"empty name", `{"project":"p","name":"","base_model":"trainyard/tiny-chat"}`, []string{`["body","name"] string_too_short`}},
		{"dot names", `{"project":"..","name":"..","base_model":"trainyard/tiny-chat"}`,
			[]string{`["body","project"] value_error`, `["body","name"] value_error`}},
		{"dot entity", `{"entity":".","project":"p","name":".","base_model":"trainyard/tiny-chat"}`,
			[]string{`["body","entity"] value_error`, `["body","name"] value_error`}},
		{"unknown base model", `{"project":"p","name":"n","base_model":"gpt-5"}`, []string{`["body","base_model"] literal_error`}},
		{"malformed", `{"project": "p",}`, []string{`["body",16] json_invalid`}},
	}
	for _, c := range cases {
		res := e.call("POST", "/v1/preview/models", c.body)
		if got := locs(t, res.Errors(t)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: errors %v, want %v", c.name, got, c.want)
		}
	}
	// The unknown base model error lists the known ones.
	res := e.call("POST", "/v1/preview/models", `{"project":"p","name":"n","base_model":"gpt-5"}`)
	ctx := res.Errors(t)[0]["ctx"].(map[string]any)
	if ctx["expected"] != "'OpenPipe/Qwen3-14B-Instruct' or 'trainyard/tiny-chat'" {
		t.Errorf("expected = %v", ctx["expected"])
	}
	// Nothing was created by any of them.
	for _, name := range []string{"n", "x y", ""} {
		if _, err := e.db.FindModelByName(context.Background(), e.acct.ID, "team-a", "p", name); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
			t.Errorf("model %q exists after a 422", name)
		}
	}
}

func TestMalformedJSONMatchesFastAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.call("POST", "/v1/preview/models", "{\n  \"project\": 'p'\n}")
	errs := res.Errors(t)
	want := map[string]any{"type": "json_invalid", "loc": []any{"body", float64(15)}, "msg": "JSON decode error",
		"input": map[string]any{}, "ctx": map[string]any{"error": "Expecting value"}}
	if len(errs) != 1 || !reflect.DeepEqual(errs[0], want) {
		t.Errorf("errors = %v, want [%v]", errs, want)
	}
	res = e.call("POST", "/v1/preview/models", "{\"project\": \"\xff\"}")
	mustStatus(t, res, http.StatusBadRequest)
	if d := res.JSON(t)["detail"]; d != "There was an error parsing the body" {
		t.Errorf("detail = %q", d)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(cfg *api.Config, _ *api.Deps) { cfg.MaxBodyBytes = 1024 })
	big := `{"project":"p","name":"big","base_model":"trainyard/tiny-chat","pad":"` + strings.Repeat("x", 2000) + `"}`
	res := e.call("POST", "/v1/preview/models", big)
	mustStatus(t, res, http.StatusRequestEntityTooLarge)
	if d := res.JSON(t)["detail"].(string); !strings.Contains(d, "1024 bytes") {
		t.Errorf("detail = %q", d)
	}
	// Without a Content-Length (chunked), the limit applies while reading.
	res = e.call("POST", "/v1/preview/models", strings.NewReader(big), func(r *http.Request) { r.ContentLength = -1 })
	mustStatus(t, res, http.StatusRequestEntityTooLarge)
	if _, err := e.db.FindModelByName(context.Background(), e.acct.ID, "team-a", "p", "big"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Error("an oversized body created a model")
	}
}

func TestDeleteModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createModel("doomed")
	keep := e.createModel("kept")
	e.addCheckpoint(id, 1, nil)
	e.addCheckpoint(id, 2, map[string]float64{"val/reward": 0.5})
	e.addCheckpoint(keep, 1, nil)

	// Another account cannot delete it, nor learn that it exists.
	res := e.call("DELETE", "/v1/preview/models/"+id, nil, as(e.otherKey))
	mustStatus(t, res, http.StatusNotFound)
	if !e.hasCheckpointFiles(id, 1) {
		t.Fatal("another account's delete removed objects")
	}

	// Any UUID spelling is accepted and answered canonically.
	res = e.call("DELETE", "/v1/preview/models/"+strings.ToUpper(id), nil)
	mustStatus(t, res, http.StatusOK)
	want := map[string]any{"model_id": id, "deleted_checkpoints": float64(2), "deleted_run": false}
	if got := res.JSON(t); !reflect.DeepEqual(got, want) {
		t.Errorf("response = %v, want %v", got, want)
	}
	if e.hasCheckpointFiles(id, 1) || e.hasCheckpointFiles(id, 2) {
		t.Error("checkpoint objects remain after the model was deleted")
	}
	if !e.hasCheckpointFiles(keep, 1) {
		t.Error("another model's objects were deleted")
	}
	if _, err := e.db.FindModel(context.Background(), e.acct.ID, id); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
		t.Errorf("model still found: %v", err)
	}
	mustStatus(t, e.call("DELETE", "/v1/preview/models/"+id, nil), http.StatusNotFound)
	mustStatus(t, e.call("DELETE", "/v1/preview/models/"+uuid.NewString(), nil), http.StatusNotFound)
}

func TestNonUUIDPathIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ method, path, body string }{
		{"DELETE", "/v1/preview/models/abc", ""},
		{"GET", "/v1/preview/models/abc/checkpoints", ""},
		{"DELETE", "/v1/preview/models/abc/checkpoints", `{"steps":[1]}`},
		{"POST", "/v1/preview/models/abc/log", `{"split":"val","trajectory_groups":[]}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		errs := e.call(c.method, c.path, body).Errors(t)
		want := map[string]any{
			"type": "uuid_parsing", "loc": []any{"path", "model_id"}, "input": "abc",
			"msg": "Input should be a valid UUID, invalid length: expected length 32 for simple format, found 3",
			"ctx": map[string]any{"error": "invalid length: expected length 32 for simple format, found 3"},
		}
		if len(errs) != 1 || !reflect.DeepEqual(errs[0], want) {
			t.Errorf("%s %s: errors = %v", c.method, c.path, errs)
		}
	}
}

func TestDeleteModelCancelsAndRemovesItsJobs(t *testing.T) {
	t.Parallel()
	fw := &fakeWorkflows{}
	e := newEnv(t, func(_ *api.Config, deps *api.Deps) { deps.Workflows = fw })
	fw.db = e.db
	ctx := context.Background()
	id := e.createModel("with-jobs")
	other := e.createModel("bystander")
	newJob := func(modelID string, status trainyard.JobStatus) string {
		j, _, err := e.db.CreateJob(ctx, &trainyard.Job{AccountID: e.acct.ID, ModelID: modelID, Kind: trainyard.JobKindRL, Status: status})
		if err != nil {
			t.Fatal(err)
		}
		input := []byte(`{"trajectory_groups":[]}`)
		if err := e.blobs.PutJobInput(ctx, j.ID, "input.json", bytes.NewReader(input), int64(len(input))); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	running := newJob(id, trainyard.JobRunning)
	done := newJob(id, trainyard.JobCompleted)
	kept := newJob(other, trainyard.JobRunning)

	mustStatus(t, e.call("DELETE", "/v1/preview/models/"+id, nil), http.StatusOK)
	if !reflect.DeepEqual(fw.cancelled, []string{running}) {
		t.Errorf("cancelled = %v, want only the running job %s", fw.cancelled, running)
	}
	for _, j := range []string{running, done} {
		if _, err := e.db.GetJob(ctx, j); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
			t.Errorf("job %s still stored: %v", j, err)
		}
		if _, err := e.blobs.GetJobInput(ctx, j, "input.json"); trainyard.ErrorCode(err) != trainyard.ENOTFOUND {
			t.Errorf("input of job %s still stored: %v", j, err)
		}
	}
	rc, err := e.blobs.GetJobInput(ctx, kept, "input.json")
	if err != nil {
		t.Fatalf("another model's job input was deleted: %v", err)
	}
	rc.Close()
}
