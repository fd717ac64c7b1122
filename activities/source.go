package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/jobspec"
)

// fetchData reads the job's SFT data: the copy stored with the job (which
// the Fetch activity makes before the job's turn), otherwise
// training_data_url, copied in first (jobs whose workflows predate Fetch).
func (a *Activities) fetchData(ctx context.Context, job *trainyard.Job, model *trainyard.Model, rawURL string) ([]byte, error) {
	if rc, err := a.d.Blobs.GetJobInput(ctx, job.ID, jobspec.DataFile); err == nil {
		defer rc.Close()
		return a.readLimited(rc, "the stored training data")
	} else if !isCode(err, trainyard.ENOTFOUND) {
		return nil, classify(err, "open the stored training data")
	}
	if _, err := a.copyIn(ctx, job, model, rawURL, nil); err != nil {
		return nil, err
	}
	rc, err := a.d.Blobs.GetJobInput(ctx, job.ID, jobspec.DataFile)
	if err != nil {
		return nil, classify(err, "open the stored training data")
	}
	defer rc.Close()
	return a.readLimited(rc, "the stored training data")
}

// openURL opens training data by scheme.
func (a *Activities) openURL(ctx context.Context, model *trainyard.Model, raw string) (io.ReadCloser, error) {
	u, _ := url.Parse(raw) // jobspec.CheckDataURL parsed it
	switch u.Scheme {
	case jobspec.SchemeS3:
		rc, err := a.d.Blobs.GetURL(ctx, raw)
		if err != nil {
			return nil, classify(err, "read training_data_url")
		}
		return rc, nil
	case jobspec.SchemeArtifact:
		return a.openArtifact(ctx, model, raw)
	case jobspec.SchemeFile:
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, invalidf("training_data_url: %v", errors.Unwrap(err))
		}
		return f, nil
	}
	return a.download(ctx, raw)
}

// readLimited reads r up to the configured data limit.
func (a *Activities) readLimited(r io.Reader, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, a.cfg.MaxDataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > a.cfg.MaxDataBytes {
		return nil, invalidf("%s is larger than the limit of %d bytes", what, a.cfg.MaxDataBytes)
	}
	return data, nil
}
