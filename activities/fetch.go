package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

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
// Config.FetchPerAccount of a worker's downloads at once.
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
	ka := startKeepAlive(ctx, a.cfg.HeartbeatInterval, 0)
	defer ka.close()
	n, err := a.copyIn(ctx, job, model, cfg.TrainingDataURL, ka)
	if err != nil {
		return nil, fetchError(activity.GetInfo(ctx).Attempt, err)
	}
	a.d.Logger.Info("training data fetched", zap.String("job_id", job.ID), zap.String("model_id", job.ModelID), zap.Int64("bytes", n))
	return &FetchResult{Bytes: n}, nil
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
	var appErr *temporal.ApplicationError
	switch {
	case err != nil && errors.As(err, &appErr) && !errors.Is(context.Cause(dctx), errDownloadDeadline):
		return 0, err // classified already (storeReader), and to be returned as it is
	case err != nil:
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

// deadlineError says so when err comes from the attempt's deadline.
func (a *Activities) deadlineError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errDownloadDeadline) {
		return fmt.Errorf("training_data_url did not finish downloading within %s", a.cfg.DownloadTimeout)
	}
	return err
}

// fetchError makes a failure that only the user can fix final after a few
// attempts: a data server that refuses connections or does not resolve is
// the URL's fault, not an outage of ours, so it should not hold the job for
// the whole retry window. The same failures of the platform's own object
// store (reading an upload, storing the copy) are an outage, retried until
// the job's deadline.
func fetchError(attempt int32, err error) error {
	var dnsErr *net.DNSError
	var server *fromDataServer
	user := errors.As(err, &server)
	refused := user && errors.Is(err, syscall.ECONNREFUSED)
	unresolved := user && errors.As(err, &dnsErr) && dnsErr.IsNotFound
	if (refused || unresolved) && attempt >= fetchUserErrorAttempts {
		reason := "the host refused the connection"
		if unresolved {
			reason = "the host name does not resolve"
		}
		return invalidf("training_data_url: %s (%d attempts)", reason, attempt)
	}
	return err
}

// fetchUserErrorAttempts is how many attempts a refused or unresolvable
// URL gets before its job fails.
const fetchUserErrorAttempts = 3

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
