package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// ErrFetchBusy types the retryable error of a Fetch whose account already
// uses its share of this worker's downloads.
const ErrFetchBusy = "FetchBusy"

// FetchInput names the job whose training data to copy in.
type FetchInput struct {
	JobID string
}

// FetchResult says what Fetch stored.
type FetchResult struct {
	// Bytes is the size of the stored copy (0 for RL jobs).
	Bytes int64
	// AlreadyStored is true when an earlier attempt had stored it.
	AlreadyStored bool
}

// Fetch copies an SFT job's training data from its training_data_url into
// the job's own storage, where Prepare reads it. It runs on the fetch task
// queue, apart from training: a slow or hanging server holds one download
// slot, never a compute slot, so it cannot delay anyone's training. Each
// attempt has a total deadline (Config.DownloadTimeout) besides the stall
// timer, the copy is bounded by Config.MaxDataBytes and spooled through a
// temporary file rather than memory, and one account holds at most
// Config.FetchPerAccount of a worker's downloads at once. A failing data
// server fails the job at once, after a few attempts or once
// Config.DownloadRetryWindow is used up, as fetchError decides.
func (a *Activities) Fetch(ctx context.Context, in FetchInput) (*FetchResult, error) {
	job, err := a.d.Jobs.GetJob(ctx, in.JobID)
	if err != nil {
		return nil, classify(err, "load job")
	}
	if job.Kind != trainyard.JobKindSFT || job.Status.Terminal() {
		// Nothing to fetch; a closed job's run (a reset after the end)
		// learns its outcome from WaitTurn.
		return &FetchResult{}, nil
	}
	if rc, err := a.d.Blobs.GetJobInput(ctx, job.ID, jobspec.DataFile); err == nil {
		rc.Close()
		return &FetchResult{AlreadyStored: true}, nil
	} else if !isCode(err, trainyard.ENOTFOUND) {
		return nil, classify(err, "look for the stored training data")
	}
	model, err := a.d.Models.FindModel(ctx, job.AccountID, job.ModelID)
	if err != nil {
		return nil, classify(err, "load the job's model")
	}
	var cfg jobspec.JobConfig
	if err := json.Unmarshal(job.Config, &cfg); err != nil {
		return nil, invalidf("the job's stored configuration is not valid JSON: %v", err)
	}
	release, ok := a.fetches.acquire(job.AccountID)
	if !ok {
		return nil, temporal.NewApplicationErrorWithOptions(
			"the account's other downloads use its share of this worker; waiting for one to finish", ErrFetchBusy,
			temporal.ApplicationErrorOptions{NextRetryDelay: a.cfg.PollInterval * 4})
	}
	defer release()
	// The retry window counts from the first attempt that got this far,
	// kept in the heartbeat details across attempts: time spent waiting
	// for a download slot or a worker is not the data server's.
	since := time.Now()
	var hb fetchHeartbeat
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &hb) == nil && !hb.DownloadSince.IsZero() {
		since = hb.DownloadSince
	}
	ka := startKeepAliveSince(ctx, a.cfg.HeartbeatInterval, 0, since)
	defer ka.close()
	n, err := a.copyIn(ctx, job, model, cfg.TrainingDataURL, ka)
	if err != nil {
		return nil, fetchError(ctx, err, activity.GetInfo(ctx).Attempt, since, a.cfg.DownloadRetryWindow)
	}
	a.d.Logger.Info("training data fetched", zap.String("job_id", job.ID), zap.String("model_id", job.ModelID), zap.Int64("bytes", n))
	return &FetchResult{Bytes: n}, nil
}

// fetchHeartbeat is the heartbeat details of Fetch: the bytes read so far
// (Saved) and DownloadSince, when the job's first attempt began
// downloading, which the retry window counts from.
type fetchHeartbeat struct {
	heartbeat
	DownloadSince time.Time
}

// errDownloadDeadline ends a download that kept going past its attempt's
// deadline.
var errDownloadDeadline = errors.New("download deadline")

// copyIn streams rawURL into the job's stored copy of its data through a
// temporary file, reporting the bytes read on ka (may be nil), and returns
// the size stored.
func (a *Activities) copyIn(ctx context.Context, job *trainyard.Job, model *trainyard.Model, rawURL string, ka *keepAlive) (int64, error) {
	if err := jobspec.CheckDataURL(rawURL, a.cfg.Data); err != nil {
		return 0, invalidf("training_data_url: %v", err)
	}
	dctx, cancel := context.WithTimeoutCause(ctx, a.cfg.DownloadTimeout, errDownloadDeadline)
	defer cancel()
	rc, err := a.openURL(dctx, model, rawURL)
	if err != nil {
		return 0, a.deadlineError(dctx, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp("", "trainyard-data-*")
	if err != nil {
		return 0, fmt.Errorf("spool the training data: %w", err)
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	n, err := io.Copy(f, &countingReader{r: io.LimitReader(rc, a.cfg.MaxDataBytes+1), ka: ka})
	if err != nil {
		return 0, a.deadlineError(dctx, fmt.Errorf("read training_data_url: %w", err))
	}
	if n > a.cfg.MaxDataBytes {
		return 0, invalidf("training_data_url is larger than the limit of %d bytes", a.cfg.MaxDataBytes)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("spool the training data: %w", err)
	}
	if err := a.d.Blobs.PutJobInput(ctx, job.ID, jobspec.DataFile, f, n); err != nil {
		return 0, classify(err, "store a copy of the training data")
	}
	return n, nil
}

// deadlineError says so when err, a failure to open or read the training
// data, comes from the attempt's deadline, and makes a data server's
// permanent failures final. A data server's failures (the deadline's
// included) stay dataServerErrors, for Fetch to bound; the object store's
// are classified already (storeReader) and come back as they are.
func (a *Activities) deadlineError(ctx context.Context, err error) error {
	var ds *dataServerError
	fromServer := errors.As(err, &ds)
	if errors.Is(context.Cause(ctx), errDownloadDeadline) {
		msg := fmt.Sprintf("training_data_url did not finish downloading within %s", a.cfg.DownloadTimeout)
		if fromServer {
			return &dataServerError{msg: msg, err: ds.err}
		}
		return errors.New(msg)
	}
	var appErr *temporal.ApplicationError
	switch {
	case fromServer && ds.permanent:
		return temporal.NewNonRetryableApplicationError(ds.msg, ErrInvalidInput, ds.err)
	case fromServer:
		return ds
	case errors.As(err, &appErr):
		return appErr // as it is: Temporal reads an application error only unwrapped
	}
	return err
}

// countingReader reports the bytes read so far in the heartbeats.
type countingReader struct {
	r  io.Reader
	ka *keepAlive
	n  int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.ka != nil {
		c.ka.saved.Store(c.n)
	}
	return n, err
}

// accountSlots bounds how many of a worker's downloads one account holds.
type accountSlots struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func (s *accountSlots) acquire(account string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if s.n[account] >= s.max {
		return nil, false
	}
	s.n[account]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n[account]--; s.n[account] == 0 {
			delete(s.n, account)
		}
	}, true
}
