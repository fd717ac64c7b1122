package activities

import (
	"context"
	"errors"
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
		return storeReader{rc}, nil
	case jobspec.SchemeArtifact:
		rc, err := a.openArtifact(ctx, model, raw)
		if err != nil {
			return nil, err
		}
		return storeReader{rc}, nil
	case jobspec.SchemeFile:
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, invalidf("training_data_url: %v", errors.Unwrap(err))
		}
		return f, nil
	}
	return a.download(ctx, raw)
}

// readLimited reads an object of the store up to the configured data limit.
// A read that breaks off is the store's outage, not bad data: retried, under
// a message without the store's address.
func (a *Activities) readLimited(r io.Reader, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, a.cfg.MaxDataBytes+1))
	if err != nil {
		return nil, classify(err, "read "+what)
	}
	if int64(len(data)) > a.cfg.MaxDataBytes {
		return nil, invalidf("%s is larger than the limit of %d bytes", what, a.cfg.MaxDataBytes)
	}
	return data, nil
}

// storeReader reads an object of a store the platform reads for the user
// (its own, for uploads; an operator's allowed bucket): a read that breaks
// off is that store's outage, retried under a message without its address.
type storeReader struct{ io.ReadCloser }

func (r storeReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = classify(err, "read the training data")
	}
	return n, err
}
