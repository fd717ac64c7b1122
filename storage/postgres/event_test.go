package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
)

func TestAppendEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)

	e, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 1, Type: trainyard.EventTrainingStarted, Data: map[string]any{"num_sequences": 8}})
	mustNil(t, err)
	if e.ID == "" || e.CreatedAt.IsZero() || e.Data["num_sequences"] != float64(8) {
		t.Fatalf("stored = %+v", e)
	}
	// A retry with a different generated id and data returns the first.
	again, err := f.db.AppendEvent(ctx, &trainyard.Event{ID: "01900000-0000-7000-8000-0000000000aa", JobID: j.ID, Seq: 1, Type: trainyard.EventTrainingStarted, Data: map[string]any{"num_sequences": 9}})
	mustNil(t, err)
	if again.ID != e.ID || again.Data["num_sequences"] != float64(8) {
		t.Fatalf("retry returned %+v, want %+v", again, e)
	}

	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 2, Type: trainyard.EventGradientStep, Data: map[string]any{"loss": 1.25}})
	mustNil(t, err)
	end, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 3, Type: trainyard.EventTrainingEnded})
	mustNil(t, err)
	if len(end.Data) != 0 || end.Data == nil {
		t.Fatalf("nil data should be stored as {}: %v", end.Data)
	}
	// The terminal event can be retried, but a second one is a conflict.
	retried, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 3, Type: trainyard.EventTrainingEnded})
	mustNil(t, err)
	if retried.ID != end.ID {
		t.Fatal("terminal retry returned another event")
	}
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 4, Type: trainyard.EventTrainingFailed, Data: map[string]any{"error_message": "x"}})
	wantCode(t, err, trainyard.ECONFLICT)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 5, Type: trainyard.EventTrainingEnded})
	wantCode(t, err, trainyard.ECONFLICT)

	last, err := f.db.LastEvent(ctx, j.ID)
	mustNil(t, err)
	if last.ID != end.ID || last.Seq != 3 {
		t.Fatalf("LastEvent = %+v", last)
	}

	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: fakeID, Seq: 1, Type: trainyard.EventTrainingStarted})
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: "j", Seq: 1, Type: trainyard.EventTrainingStarted})
	wantCode(t, err, trainyard.ENOTFOUND)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 0, Type: trainyard.EventTrainingStarted})
	wantCode(t, err, trainyard.EINVALID)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 9})
	wantCode(t, err, trainyard.EINVALID)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 9, Type: trainyard.EventGradientStep, Data: map[string]any{"f": func() {}}})
	wantCode(t, err, trainyard.EINVALID)
	// jsonb cannot hold \u0000.
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 9, Type: trainyard.EventGradientStep, Data: map[string]any{"s": "a\x00b"}})
	wantCode(t, err, trainyard.EINVALID)
	_, err = f.db.LastEvent(ctx, newJob(t, f.db, f.model).ID)
	wantCode(t, err, trainyard.ENOTFOUND)
}

func TestAppendEventRaces(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	const n = 8
	var wg sync.WaitGroup
	ids := make([]string, n)
	errs := make([]error, n)
	// Retries of one event all get the stored one.
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 1, Type: trainyard.EventTrainingStarted})
			errs[i] = err
			if e != nil {
				ids[i] = e.ID
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("writer %d: id %s err %v", i, ids[i], errs[i])
		}
	}
	// Terminal events at different sequence numbers: exactly one wins.
	codes := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ := trainyard.EventTrainingEnded
			if i%2 == 0 {
				typ = trainyard.EventTrainingFailed
			}
			_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 2 + i, Type: typ})
			codes[i] = trainyard.ErrorCode(err)
		}()
	}
	wg.Wait()
	wantOneWinner(t, codes, "terminal events stored")
}

func appendSteps(t testing.TB, f *fixture, jobID string, n int) []*trainyard.Event {
	t.Helper()
	var out []*trainyard.Event
	for i := 1; i <= n; i++ {
		e, err := f.db.AppendEvent(context.Background(), &trainyard.Event{JobID: jobID, Seq: i, Type: trainyard.EventGradientStep, Data: map[string]any{"loss": float64(i)}})
		mustNil(t, err)
		out = append(out, e)
	}
	return out
}

func TestListEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	seqs := func(p *trainyard.Page[*trainyard.Event]) []int {
		out := []int{}
		for _, e := range p.Items {
			out = append(out, e.Seq)
		}
		return out
	}
	eq := func(name string, p *trainyard.Page[*trainyard.Event], more bool, want ...int) {
		t.Helper()
		got := seqs(p)
		if len(got) != len(want) || p.HasMore != more {
			t.Fatalf("%s: %v has_more %v, want %v %v", name, got, p.HasMore, want, more)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v", name, got, want)
			}
		}
	}

	p, err := f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{})
	mustNil(t, err)
	eq("empty", p, false)

	es := appendSteps(t, f, j.ID, 6)
	p, err = f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{Limit: 3})
	mustNil(t, err)
	eq("first page", p, true, 1, 2, 3)
	p, err = f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{Limit: 3, After: es[2].ID})
	mustNil(t, err)
	eq("exact multiple", p, false, 4, 5, 6)
	p, err = f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{After: es[5].ID})
	mustNil(t, err)
	eq("after last", p, false)
	p, err = f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{Order: trainyard.OrderDesc, Limit: 2, After: es[3].ID})
	mustNil(t, err)
	eq("desc", p, true, 3, 2)
	if p.Items[0].Data["loss"] != float64(3) {
		t.Fatalf("data = %v", p.Items[0].Data)
	}

	otherJob := newJob(t, f.db, f.model)
	foreign := appendSteps(t, f, otherJob.ID, 1)[0]
	for _, bad := range []trainyard.ListOptions{{After: foreign.ID}, {After: fakeID}, {After: "x"}, {Order: "up"}} {
		_, err = f.db.ListEvents(ctx, j.ID, bad)
		wantCode(t, err, trainyard.EINVALID)
	}
	_, err = f.db.ListEvents(ctx, "x", trainyard.ListOptions{})
	wantCode(t, err, trainyard.ENOTFOUND)
}

func BenchmarkListEventsPage(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	j := newJob(b, f.db, f.model)
	es := appendSteps(b, f, j.ID, 1000)
	after := es[499].ID
	for b.Loop() {
		p, err := f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{After: after, Limit: 100})
		if err != nil || len(p.Items) != 100 {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	j := newJob(b, f.db, f.model)
	seq := 0
	for b.Loop() {
		seq++
		if _, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: seq, Type: trainyard.EventGradientStep, Data: map[string]any{"loss": 1.0}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCountEvents counts a job's events of one type.
func TestCountEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	for seq, typ := range []trainyard.EventType{trainyard.EventTrainingStarted, trainyard.EventGradientStep,
		trainyard.EventTrainingPaused, trainyard.EventTrainingResumed, trainyard.EventGradientStep} {
		_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: seq + 1, Type: typ})
		mustNil(t, err)
	}
	for typ, want := range map[trainyard.EventType]int{trainyard.EventGradientStep: 2, trainyard.EventTrainingPaused: 1, trainyard.EventTrainingEnded: 0} {
		n, err := f.db.CountEvents(ctx, j.ID, typ)
		mustNil(t, err)
		if n != want {
			t.Errorf("%s: %d events, want %d", typ, n, want)
		}
	}
	n, err := f.db.CountEvents(ctx, fakeID, trainyard.EventGradientStep)
	mustNil(t, err)
	if n != 0 {
		t.Fatalf("events of a missing job: %d", n)
	}
}
