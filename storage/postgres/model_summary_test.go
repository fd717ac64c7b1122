package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/trainyard/trainyard"
)

// TestModelSummaries: the account's models come with their newest
// checkpoint (none for a model not trained yet), newest model first, paged
// by id; another account sees none of them.
func TestModelSummaries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := newAccount(t, f.db)
	second, third := newModel(t, f.db, f.acct), newModel(t, f.db, f.acct)
	foreign := newModel(t, f.db, other)
	newCheckpoints(t, f.db, f.model.ID, 1, 3, 2)
	newCheckpoints(t, f.db, foreign.ID, 1)
	mustNil(t, f.db.MergeCheckpointMetrics(ctx, f.model.ID, 3, map[string]float64{"val/reward": 0.75}))

	got, err := f.db.FindModelSummary(ctx, f.acct.ID, f.model.ID)
	mustNil(t, err)
	if got.ID != f.model.ID || got.Name != f.model.Name || got.Latest == nil || got.Latest.Step != 3 ||
		got.Latest.ModelID != f.model.ID || got.Latest.Metrics["val/reward"] != 0.75 || got.Latest.Metrics["loss"] != 3 ||
		got.Latest.ID == "" || got.Latest.CreatedAt.IsZero() {
		t.Fatalf("FindModelSummary = %+v latest %+v", got, got.Latest)
	}
	got, err = f.db.FindModelSummary(ctx, f.acct.ID, second.ID)
	mustNil(t, err)
	if got.Latest != nil || got.BaseModel != "base" {
		t.Fatalf("an untrained model's summary = %+v latest %+v", got, got.Latest)
	}
	_, err = f.db.FindModelSummary(ctx, other.ID, f.model.ID)
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.FindModelSummary(ctx, f.acct.ID, "not-a-uuid")
	wantCode(t, err, trainyard.ENOTFOUND)

	// Deleting the newest step makes the one before it the newest.
	_, _, err = f.db.DeleteCheckpoints(ctx, f.model.ID, []int{3})
	mustNil(t, err)
	got, err = f.db.FindModelSummary(ctx, f.acct.ID, f.model.ID)
	mustNil(t, err)
	if got.Latest == nil || got.Latest.Step != 2 {
		t.Fatalf("after deleting step 3 the newest is %+v", got.Latest)
	}

	ids := func(p *trainyard.Page[*trainyard.ModelSummary]) []string {
		var out []string
		for _, s := range p.Items {
			out = append(out, s.ID)
		}
		return out
	}
	all, err := f.db.ListModels(ctx, f.acct.ID, trainyard.ListOptions{})
	mustNil(t, err)
	if want := []string{third.ID, second.ID, f.model.ID}; !slices.Equal(ids(all), want) || all.HasMore {
		t.Fatalf("ListModels = %v (more %v), want %v", ids(all), all.HasMore, want)
	}
	if all.Items[2].Latest == nil || all.Items[2].Latest.Step != 2 || all.Items[0].Latest != nil {
		t.Fatalf("listed newest checkpoints = %+v, %+v", all.Items[2].Latest, all.Items[0].Latest)
	}
	first, err := f.db.ListModels(ctx, f.acct.ID, trainyard.ListOptions{Limit: 2, Order: trainyard.OrderAsc})
	mustNil(t, err)
	if want := []string{f.model.ID, second.ID}; !slices.Equal(ids(first), want) || !first.HasMore {
		t.Fatalf("first asc page = %v (more %v), want %v", ids(first), first.HasMore, want)
	}
	rest, err := f.db.ListModels(ctx, f.acct.ID, trainyard.ListOptions{Limit: 2, Order: trainyard.OrderAsc, After: second.ID})
	mustNil(t, err)
	if want := []string{third.ID}; !slices.Equal(ids(rest), want) || rest.HasMore {
		t.Fatalf("second asc page = %v (more %v), want %v", ids(rest), rest.HasMore, want)
	}

	theirs, err := f.db.ListModels(ctx, other.ID, trainyard.ListOptions{})
	mustNil(t, err)
	if want := []string{foreign.ID}; !slices.Equal(ids(theirs), want) {
		t.Fatalf("the other account lists %v, want %v", ids(theirs), want)
	}
	_, err = f.db.ListModels(ctx, f.acct.ID, trainyard.ListOptions{After: "nope"})
	wantCode(t, err, trainyard.EINVALID)
	_, err = f.db.ListModels(ctx, f.acct.ID, trainyard.ListOptions{Order: "sideways"})
	wantCode(t, err, trainyard.EINVALID)
}
