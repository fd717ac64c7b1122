package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/trainyard/trainyard"
)

// TestNoEventAfterTheTerminalOne checks that a job's terminal event stays
// its last: a straggling step of a closed job is refused, even when it races
// the terminal event.
func TestNoEventAfterTheTerminalOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	j := newJob(t, f.db, f.model)
	_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 1, Type: trainyard.EventTrainingStarted})
	mustNil(t, err)
	step, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 2, Type: trainyard.EventGradientStep})
	mustNil(t, err)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 3, Type: trainyard.EventTrainingFailed, Data: map[string]any{"error_message": "cancelled"}})
	mustNil(t, err)

	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 4, Type: trainyard.EventGradientStep})
	wantCode(t, err, trainyard.ECONFLICT)
	// A retried write of an event stored before the end is still a no-op.
	again, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: 2, Type: trainyard.EventGradientStep})
	mustNil(t, err)
	if again.ID != step.ID {
		t.Fatal("retry returned another event")
	}

	// A terminal event must come after every other.
	j2 := newJob(t, f.db, f.model)
	for _, seq := range []int{1, 3} {
		_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j2.ID, Seq: seq, Type: trainyard.EventGradientStep})
		mustNil(t, err)
	}
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j2.ID, Seq: 2, Type: trainyard.EventTrainingEnded})
	wantCode(t, err, trainyard.ECONFLICT)
	_, err = f.db.AppendEvent(ctx, &trainyard.Event{JobID: j2.ID, Seq: 4, Type: trainyard.EventTrainingEnded})
	mustNil(t, err)

	// Racing steps and a terminal event: whatever wins, nothing follows
	// the terminal event.
	for round := range 20 {
		j := newJob(t, f.db, f.model)
		var wg sync.WaitGroup
		for seq := 1; seq <= 6; seq++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				typ := trainyard.EventGradientStep
				if seq == 3 {
					typ = trainyard.EventTrainingFailed
				}
				_, err := f.db.AppendEvent(ctx, &trainyard.Event{JobID: j.ID, Seq: seq, Type: typ})
				if err != nil && trainyard.ErrorCode(err) != trainyard.ECONFLICT {
					t.Errorf("round %d seq %d: %v", round, seq, err)
				}
			}()
		}
		wg.Wait()
		page, err := f.db.ListEvents(ctx, j.ID, trainyard.ListOptions{Limit: 10})
		mustNil(t, err)
		for i, e := range page.Items {
			if e.Type == trainyard.EventTrainingFailed && i != len(page.Items)-1 {
				t.Fatalf("round %d: the terminal event at seq %d is followed by seq %d", round, e.Seq, page.Items[i+1].Seq)
			}
		}
	}
}
