package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap/zaptest"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/jobspec"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/storage/s3"
)

// testBaseName is the built-in model the tests train: small enough for a
// step in well under a second on one core.
const testBaseName = "trainyard/tiny-chat"

var testBase struct {
	once sync.Once
	base *engine.Base
	err  error
}

// bases serves the built-in test model.
type bases struct{}

// Base opens the test model once per test binary; any other name is
// ENOTFOUND.
func (bases) Base(_ context.Context, name string) (*engine.Base, error) {
	if name != testBaseName {
		return nil, trainyard.Errorf(trainyard.ENOTFOUND, "base model %q not found", name)
	}
	testBase.once.Do(func() { testBase.base, testBase.err = engine.OpenBuiltin(testBaseName) })
	return testBase.base, testBase.err
}

// testModel returns the built-in test model.
func testModel(t testing.TB) *engine.Base {
	t.Helper()
	base, err := bases{}.Base(context.Background(), testBaseName)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// fixture is a real database and bucket with one account and model, and
// activities over them.
type fixture struct {
	db    *postgres.DB
	blobs *s3.Store
	acts  *Activities
	acct  *trainyard.Account
	model *trainyard.Model
}

func newFixture(t testing.TB, cfg Config, wf Workflows) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{db: pgtest.New(t), blobs: s3test.New(t)}
	var err error
	if f.acct, err = f.db.CreateAccount(ctx, "team-"+uuid.NewString()[:8]); err != nil {
		t.Fatal(err)
	}
	f.model = f.newModel(t)
	f.acts, err = New(Deps{Jobs: f.db, Events: f.db, Models: f.db, Blobs: f.blobs, Queue: f.db, Workflows: wf,
		Bases: bases{}, Files: f.blobs, Logger: zaptest.NewLogger(t),
		HTTP: NewFetchClient(AddressPolicy{AllowLocal: true})}, cfg) // test servers listen on loopback
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) newModel(t testing.TB) *trainyard.Model {
	t.Helper()
	m := &trainyard.Model{AccountID: f.acct.ID, Entity: f.acct.Entity, Project: "p", Name: "m-" + uuid.NewString()[:8], BaseModel: testBaseName}
	if err := f.db.CreateModel(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// newJob stores input (when given) and creates a QUEUED job on model.
func (f *fixture) newJob(t testing.TB, model *trainyard.Model, kind trainyard.JobKind, cfg jobspec.JobConfig, input []byte) *trainyard.Job {
	t.Helper()
	ctx := context.Background()
	id := uuid.Must(uuid.NewV7()).String()
	if input != nil {
		if err := f.blobs.PutJobInput(ctx, id, jobspec.InputFile, bytes.NewReader(input), int64(len(input))); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := json.Marshal(cfg)
	j, _, err := f.db.CreateJob(ctx, &trainyard.Job{ID: id, AccountID: f.acct.ID, ModelID: model.ID, Kind: kind, Config: raw})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// run executes one activity in a fresh test environment (heartbeat details
// optional) and decodes its result into out.
func (f *fixture) run(t *testing.T, fn, in, out any, heartbeatDetails ...any) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	env.SetTestTimeout(5 * time.Minute)
	if len(heartbeatDetails) > 0 {
		env.SetHeartbeatDetails(heartbeatDetails[0])
	}
	v, err := env.ExecuteActivity(fn, in)
	if err != nil || out == nil {
		return err
	}
	return v.Get(out)
}

// events returns the job's events in order.
func (f *fixture) events(t *testing.T, jobID string) []*trainyard.Event {
	t.Helper()
	page, err := f.db.ListEvents(context.Background(), jobID, trainyard.ListOptions{Limit: trainyard.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

// eventTypes summarises events as "type@seq".
func eventTypes(evs []*trainyard.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%s@%d", e.Type, e.Seq)
	}
	return out
}

// checkpointFile reads one file of a checkpoint.
func (f *fixture) checkpointFile(t *testing.T, model *trainyard.Model, step int, name string) []byte {
	t.Helper()
	rc, err := f.blobs.GetCheckpointFile(context.Background(), model.ID, step, name)
	if err != nil {
		t.Fatalf("checkpoint %d %s: %v", step, name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadAdapter opens a stored checkpoint's adapter.
func (f *fixture) loadAdapter(t *testing.T, model *trainyard.Model, step int) *engine.Adapter {
	t.Helper()
	ad, err := testModel(t).LoadAdapter(bytes.NewReader(f.checkpointFile(t, model, step, trainyard.AdapterWeightsFile)),
		f.checkpointFile(t, model, step, trainyard.AdapterConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

// seedCheckpoint gives each model the same checkpoint 1: a fresh adapter and
// optimizer state, with its row.
func (f *fixture) seedCheckpoint(t *testing.T, models ...*trainyard.Model) {
	t.Helper()
	ctx := context.Background()
	ad, err := testModel(t).NewAdapter(engine.DefaultLoRAConfig(), 7)
	if err != nil {
		t.Fatal(err)
	}
	var weights, opt bytes.Buffer
	if err := ad.WriteWeights(&weights); err != nil {
		t.Fatal(err)
	}
	if err := engine.NewOptimizerState(ad).Write(&opt); err != nil {
		t.Fatal(err)
	}
	cfg, err := ad.ConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		for name, data := range map[string][]byte{trainyard.AdapterWeightsFile: weights.Bytes(),
			trainyard.AdapterConfigFile: cfg, trainyard.OptimizerStateFile: opt.Bytes()} {
			if err := f.blobs.PutCheckpointFile(ctx, m.ID, 1, name, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: m.ID, Step: 1}); err != nil {
			t.Fatal(err)
		}
	}
}
