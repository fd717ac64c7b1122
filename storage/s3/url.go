package s3

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/trainyard/trainyard"
)

// GetURL opens the object an s3://bucket/key URL names (an SFT
// training_data_url) with the store's credentials. Anything but such a URL is
// EINVALID, and so is a URL into the store's own models/, jobs/ or files/ objects:
// those belong to every account, and a user naming them must not read
// another account's data through a training job.
func (s *Store) GetURL(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, trainyard.Errorf(trainyard.EINVALID, "invalid S3 URL %q: want s3://bucket/key", rawURL)
	}
	key := strings.TrimPrefix(u.Path, "/")
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, trainyard.Errorf(trainyard.EINVALID, "invalid S3 URL %q: it names no object", rawURL)
	}
	if u.Host == s.bucket && (strings.HasPrefix(key, modelsPrefix) || strings.HasPrefix(key, jobsPrefix) || strings.HasPrefix(key, filesPrefix)) {
		return nil, trainyard.Errorf(trainyard.EINVALID, "S3 URL %q points into trainyard's own checkpoint and job objects", rawURL)
	}
	rc, err := s.get(ctx, u.Host, key)
	if st := statusOf(err); st >= 400 && st < 500 && st != http.StatusNotFound && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests {
		// The URL is the user's: a bucket name the server rejects or an
		// object it will not let us read does not get better on retry.
		reason := http.StatusText(st)
		var ae smithy.APIError
		if errors.As(err, &ae) {
			reason = ae.ErrorCode() + ": " + ae.ErrorMessage()
		}
		return nil, trainyard.WrapError(trainyard.EINVALID, err, "S3 refused %s (HTTP %d, %s)", rawURL, st, reason)
	}
	return rc, err
}
