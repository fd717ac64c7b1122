package postgres_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
)

func TestCreateCheckpointIsIdempotent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	job := newJob(t, f.db, f.model)

	c := &trainyard.Checkpoint{ModelID: f.model.ID, Step: 1, JobID: &job.ID, Metrics: map[string]float64{"loss": 0.5}}
	mustNil(t, f.db.CreateCheckpoint(ctx, c))
	if c.ID == "" || c.CreatedAt.IsZero() {
		t.Fatalf("not filled: %+v", c)
	}
	again := &trainyard.Checkpoint{ModelID: f.model.ID, Step: 1, Metrics: map[string]float64{"loss": 9}}
	mustNil(t, f.db.CreateCheckpoint(ctx, again))
	if again.ID != c.ID || again.Metrics["loss"] != 0.5 || again.JobID == nil || *again.JobID != job.ID {
		t.Fatalf("second create = %+v, want the stored %+v", again, c)
	}

	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: f.model.ID, Step: 0}), trainyard.EINVALID)
	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: f.model.ID, Step: 1 << 40}), trainyard.EINVALID)
	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: fakeID, Step: 1}), trainyard.ENOTFOUND)
	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: "x", Step: 1}), trainyard.ENOTFOUND)
	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: f.model.ID, Step: 2, JobID: ptr(fakeID)}), trainyard.ENOTFOUND)
	wantCode(t, f.db.CreateCheckpoint(ctx, &trainyard.Checkpoint{ModelID: f.model.ID, Step: 2, Metrics: map[string]float64{"x": math.NaN()}}), trainyard.EINVALID)
}

func TestCreateCheckpointRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &trainyard.Checkpoint{ModelID: f.model.ID, Step: 7}
			errs[i] = f.db.CreateCheckpoint(ctx, c)
			ids[i] = c.ID
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("writer %d: id %s err %v; want every writer to get %s", i, ids[i], errs[i], ids[0])
		}
	}
}

func TestFindAndLatestCheckpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.db.LatestCheckpoint(ctx, f.model.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	cs := newCheckpoints(t, f.db, f.model.ID, 1, 3, 2)

	latest, err := f.db.LatestCheckpoint(ctx, f.model.ID)
	mustNil(t, err)
	if latest.ID != cs[1].ID || latest.Step != 3 {
		t.Fatalf("latest = step %d", latest.Step)
	}
	got, err := f.db.FindCheckpoint(ctx, f.model.ID, 2)
	mustNil(t, err)
	if got.ID != cs[2].ID || got.Metrics["loss"] != 2 || got.ModelID != f.model.ID {
		t.Fatalf("FindCheckpoint = %+v", got)
	}
	for _, step := range []int{4, 0, -1, 1 << 40} {
		_, err = f.db.FindCheckpoint(ctx, f.model.ID, step)
		wantCode(t, err, trainyard.ENOTFOUND)
	}
	_, err = f.db.LatestCheckpoint(ctx, "junk")
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestListCheckpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	list := func(opts trainyard.ListOptions) ([]int, bool) {
		t.Helper()
		p, err := f.db.ListCheckpoints(ctx, f.model.ID, opts)
		mustNil(t, err)
		return steps(p.Items), p.HasMore
	}
	check := func(name string, gotSteps []int, gotMore bool, wantSteps []int, wantMore bool) {
		t.Helper()
		if !slices.Equal(gotSteps, wantSteps) || gotMore != wantMore {
			t.Fatalf("%s: steps %v has_more %v, want %v %v", name, gotSteps, gotMore, wantSteps, wantMore)
		}
	}

	s, more := list(trainyard.ListOptions{})
	check("empty", s, more, []int{}, false)

	cs := newCheckpoints(t, f.db, f.model.ID, 4, 2, 6, 1, 3, 5)
	byStep := map[int]string{}
	for _, c := range cs {
		byStep[c.Step] = c.ID
	}
	s, more = list(trainyard.ListOptions{})
	check("default", s, more, []int{1, 2, 3, 4, 5, 6}, false)
	s, more = list(trainyard.ListOptions{Limit: 3})
	check("first page", s, more, []int{1, 2, 3}, true)
	s, more = list(trainyard.ListOptions{Limit: 3, After: byStep[3]})
	check("exact multiple of limit", s, more, []int{4, 5, 6}, false)
	s, more = list(trainyard.ListOptions{After: byStep[6]})
	check("after last", s, more, []int{}, false)
	s, more = list(trainyard.ListOptions{Limit: 1, Order: trainyard.OrderDesc})
	check("newest", s, more, []int{6}, true)
	s, more = list(trainyard.ListOptions{Limit: 2, Order: trainyard.OrderDesc, After: byStep[3]})
	check("desc after", s, more, []int{2, 1}, false)
	s, more = list(trainyard.ListOptions{Limit: 1000})
	check("limit clamped", s, more, []int{1, 2, 3, 4, 5, 6}, false)

	other := newCheckpoints(t, f.db, newModel(t, f.db, f.acct).ID, 1)[0]
	for _, bad := range []trainyard.ListOptions{
		{After: other.ID}, // a checkpoint of another model
		{After: fakeID},
		{After: "not-an-id"},
		{Order: "sideways"},
	} {
		_, err := f.db.ListCheckpoints(ctx, f.model.ID, bad)
		wantCode(t, err, trainyard.EINVALID)
	}
	_, err := f.db.ListCheckpoints(ctx, "junk", trainyard.ListOptions{})
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestListCheckpointsDefaultLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	all := make([]int, 25)
	for i := range all {
		all[i] = i + 1
	}
	newCheckpoints(t, f.db, f.model.ID, all...)
	p, err := f.db.ListCheckpoints(context.Background(), f.model.ID, trainyard.ListOptions{})
	mustNil(t, err)
	if len(p.Items) != trainyard.DefaultPageLimit || !p.HasMore {
		t.Fatalf("default page: %d items has_more %v", len(p.Items), p.HasMore)
	}
}

func TestDeleteCheckpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	newCheckpoints(t, f.db, f.model.ID, 1, 2, 3)

	deleted, notFound, err := f.db.DeleteCheckpoints(ctx, f.model.ID, []int{3, 9, 1, 9, 0, 1 << 40})
	mustNil(t, err)
	if !slices.Equal(steps(deleted), []int{1, 3}) || !slices.Equal(notFound, []int{9, 0, 1 << 40}) {
		t.Fatalf("deleted %v not found %v", steps(deleted), notFound)
	}
	p, err := f.db.ListCheckpoints(ctx, f.model.ID, trainyard.ListOptions{})
	mustNil(t, err)
	if !slices.Equal(steps(p.Items), []int{2}) {
		t.Fatalf("left: %v", steps(p.Items))
	}
	deleted, notFound, err = f.db.DeleteCheckpoints(ctx, f.model.ID, nil)
	mustNil(t, err)
	if len(deleted) != 0 || len(notFound) != 0 || deleted == nil || notFound == nil {
		t.Fatalf("empty request: %v %v", deleted, notFound)
	}
	_, _, err = f.db.DeleteCheckpoints(ctx, "junk", []int{1})
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestMergeCheckpointMetrics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	newCheckpoints(t, f.db, f.model.ID, 1) // metrics {"loss": 1}

	mustNil(t, f.db.MergeCheckpointMetrics(ctx, f.model.ID, 1, map[string]float64{"val/reward": 0.75, "loss": 0.25}))
	mustNil(t, f.db.MergeCheckpointMetrics(ctx, f.model.ID, 1, map[string]float64{"train/reward": 0.5}))
	c, err := f.db.FindCheckpoint(ctx, f.model.ID, 1)
	mustNil(t, err)
	want := map[string]float64{"loss": 0.25, "val/reward": 0.75, "train/reward": 0.5}
	if len(c.Metrics) != len(want) {
		t.Fatalf("metrics = %v, want %v", c.Metrics, want)
	}
	for k, v := range want {
		if c.Metrics[k] != v {
			t.Fatalf("metrics = %v, want %v", c.Metrics, want)
		}
	}
	wantCode(t, f.db.MergeCheckpointMetrics(ctx, f.model.ID, 2, map[string]float64{"a": 1}), trainyard.ENOTFOUND)
	wantCode(t, f.db.MergeCheckpointMetrics(ctx, f.model.ID, 1<<40, map[string]float64{"a": 1}), trainyard.ENOTFOUND)
	wantCode(t, f.db.MergeCheckpointMetrics(ctx, f.model.ID, 1, map[string]float64{"a": math.Inf(1)}), trainyard.EINVALID)
	wantCode(t, f.db.MergeCheckpointMetrics(ctx, "junk", 1, nil), trainyard.ENOTFOUND)
}
