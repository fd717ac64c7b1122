package postgres_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
)

func TestSaveLogKeepsBodiesExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// Spacing, key order, a duplicate key, escapes and number spellings
	// that a parsed (jsonb) form would not keep.
	bodies := []string{
		`{"reward": 1.0, "messages_and_choices": [], "zeta": 1, "alpha": 2}`,
		`{"reward":0,"reward":0.5,"metadata":{"k":"\u00e9\u0000"},"n":1e2}`,
		`{ "reward" : -0.25 , "extra_field" : { "nested" : [1, 2.50, null] } }`,
	}
	ts := []trainyard.StoredTrajectory{
		{GroupIndex: 1, Index: 0, Reward: 0.5, Body: []byte(bodies[1])},
		{GroupIndex: 0, Index: 0, Reward: 1, Body: []byte(bodies[0])},
		{GroupIndex: 1, Index: 1, Reward: -0.25, Body: []byte(bodies[2])},
	}
	rec := &trainyard.LogRecord{ModelID: f.model.ID, Split: "val", Metrics: map[string]float64{"val/reward": 0.4}, NumGroups: 2, NumTrajectories: 3}
	mustNil(t, f.db.SaveLog(ctx, rec, ts))
	if rec.ID == "" || rec.CreatedAt.IsZero() {
		t.Fatalf("not filled: %+v", rec)
	}
	got, err := f.db.ListTrajectories(ctx, rec.ID)
	mustNil(t, err)
	want := []trainyard.StoredTrajectory{ts[1], ts[0], ts[2]} // group, then index
	if len(got) != len(want) {
		t.Fatalf("%d trajectories, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.GroupIndex != w.GroupIndex || g.Index != w.Index || g.Reward != w.Reward || string(g.Body) != string(w.Body) {
			t.Fatalf("trajectory %d = %+v %s, want %+v %s", i, g, g.Body, w, w.Body)
		}
	}
}

func TestSaveLogMergesMetricsIntoCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	newCheckpoints(t, f.db, f.model.ID, 1, 2)
	body := []trainyard.StoredTrajectory{{Reward: 1, Body: []byte(`{"reward":1}`)}}

	rec := &trainyard.LogRecord{ModelID: f.model.ID, Split: "val", Step: 2, Metrics: map[string]float64{"val/reward": 1}, NumGroups: 1, NumTrajectories: 1}
	mustNil(t, f.db.SaveLog(ctx, rec, body))
	c, err := f.db.FindCheckpoint(ctx, f.model.ID, 2)
	mustNil(t, err)
	if c.Metrics["val/reward"] != 1 || c.Metrics["loss"] != 2 {
		t.Fatalf("checkpoint 2 metrics = %v", c.Metrics)
	}
	c, err = f.db.FindCheckpoint(ctx, f.model.ID, 1)
	mustNil(t, err)
	if _, ok := c.Metrics["val/reward"]; ok {
		t.Fatalf("checkpoint 1 got the metrics of step 2: %v", c.Metrics)
	}
	// Step 0 (the base model) and a step without a checkpoint just store
	// the record.
	for _, step := range []int{0, 5} {
		r := &trainyard.LogRecord{ModelID: f.model.ID, Split: "train", Step: step, Metrics: map[string]float64{"train/reward": 3}, NumGroups: 1, NumTrajectories: 1}
		mustNil(t, f.db.SaveLog(ctx, r, body))
	}
}

func TestSaveLogErrorsStoreNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	good := []trainyard.StoredTrajectory{{Reward: 1, Body: []byte(`{}`)}}
	cases := []struct {
		name string
		rec  trainyard.LogRecord
		ts   []trainyard.StoredTrajectory
		code string
	}{
		{"unknown model", trainyard.LogRecord{ModelID: fakeID, Split: "val"}, good, trainyard.ENOTFOUND},
		{"malformed model id", trainyard.LogRecord{ModelID: "m", Split: "val"}, good, trainyard.ENOTFOUND},
		{"empty split", trainyard.LogRecord{ModelID: f.model.ID}, good, trainyard.EINVALID},
		{"bad body", trainyard.LogRecord{ModelID: f.model.ID, Split: "val"}, []trainyard.StoredTrajectory{{Body: []byte(`{"a":`)}}, trainyard.EINVALID},
		{"NaN reward", trainyard.LogRecord{ModelID: f.model.ID, Split: "val"}, []trainyard.StoredTrajectory{{Reward: math.NaN(), Body: []byte(`{}`)}}, trainyard.EINVALID},
		{"NaN metric", trainyard.LogRecord{ModelID: f.model.ID, Split: "val", Metrics: map[string]float64{"x": math.NaN()}}, good, trainyard.EINVALID},
		{"duplicate position", trainyard.LogRecord{ModelID: f.model.ID, Split: "val"}, []trainyard.StoredTrajectory{{Body: []byte(`{}`)}, {Body: []byte(`{}`)}}, trainyard.ECONFLICT},
	}
	for _, c := range cases {
		rec := c.rec
		err := f.db.SaveLog(ctx, &rec, c.ts)
		if trainyard.ErrorCode(err) != c.code {
			t.Fatalf("%s: code %q, want %q (%v)", c.name, trainyard.ErrorCode(err), c.code, err)
		}
	}
	p, err := f.db.ListLogs(ctx, f.model.ID, trainyard.ListOptions{})
	mustNil(t, err)
	if len(p.Items) != 0 {
		t.Fatalf("failed saves left %d records", len(p.Items))
	}
}

func TestListLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		rec := &trainyard.LogRecord{ModelID: f.model.ID, Split: fmt.Sprintf("s%d", i), NumGroups: 0, NumTrajectories: 0}
		mustNil(t, f.db.SaveLog(ctx, rec, nil))
		ids = append(ids, rec.ID)
	}
	p, err := f.db.ListLogs(ctx, f.model.ID, trainyard.ListOptions{Limit: 2})
	mustNil(t, err)
	if len(p.Items) != 2 || p.Items[0].ID != ids[0] || p.Items[1].ID != ids[1] || !p.HasMore {
		t.Fatalf("first page wrong: %d items, has_more %v", len(p.Items), p.HasMore)
	}
	p, err = f.db.ListLogs(ctx, f.model.ID, trainyard.ListOptions{After: ids[2], Limit: 2})
	mustNil(t, err)
	if len(p.Items) != 2 || p.Items[0].ID != ids[3] || p.HasMore {
		t.Fatalf("last page wrong: %d items, has_more %v", len(p.Items), p.HasMore)
	}
	p, err = f.db.ListLogs(ctx, f.model.ID, trainyard.ListOptions{Order: trainyard.OrderDesc, Limit: 1})
	mustNil(t, err)
	if p.Items[0].ID != ids[4] || p.Items[0].Split != "s4" {
		t.Fatalf("newest = %+v", p.Items[0])
	}
	_, err = f.db.ListLogs(ctx, f.model.ID, trainyard.ListOptions{After: "x"})
	wantCode(t, err, trainyard.EINVALID)

	// A record without trajectories lists none; an unknown one is ENOTFOUND.
	ts, err := f.db.ListTrajectories(ctx, ids[0])
	mustNil(t, err)
	if ts == nil || len(ts) != 0 {
		t.Fatalf("trajectories = %v", ts)
	}
	_, err = f.db.ListTrajectories(ctx, fakeID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.ListTrajectories(ctx, "x")
	wantCode(t, err, trainyard.ENOTFOUND)
}

// trajectoryBody is a realistic trajectory of about 2 KB.
func trajectoryBody(i int) []byte {
	return fmt.Appendf(nil, `{"messages_and_choices":[{"role":"system","content":"You are a helpful assistant that answers arithmetic questions concisely."},`+
		`{"role":"user","content":"What is %d + %d? Answer with the number only, and explain nothing at all please."},`+
		`{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"%d"},"logprobs":{"content":[`+
		`{"token":"token_id:%d","logprob":-0.0123,"bytes":[49],"top_logprobs":[]},{"token":"token_id:2","logprob":-0.5,"bytes":[50],"top_logprobs":[]}]}}],`+
		`"tools":null,"additional_histories":[],"reward":%d,"initial_policy_version":null,"final_policy_version":null,`+
		`"metrics":{"correct":true,"latency":0.25},"metadata":{"task":"add","attempt":%d},"logs":["%0600d"]}`, i, i+1, 2*i+1, i%50000, i%2, i, i)
}

func benchmarkSaveLog(b *testing.B, n int) {
	db := pgtest.New(b)
	acct := newAccount(b, db)
	m := newModel(b, db, acct)
	ctx := context.Background()
	ts := make([]trainyard.StoredTrajectory, n)
	size := 0
	for i := range ts {
		ts[i] = trainyard.StoredTrajectory{GroupIndex: i / 8, Index: i % 8, Reward: float64(i % 2), Body: trajectoryBody(i)}
		size += len(ts[i].Body)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		rec := &trainyard.LogRecord{ModelID: m.ID, Split: "train", NumGroups: n / 8, NumTrajectories: n}
		if err := db.SaveLog(ctx, rec, ts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSaveLog8(b *testing.B)    { benchmarkSaveLog(b, 8) }
func BenchmarkSaveLog1000(b *testing.B) { benchmarkSaveLog(b, 1000) }
